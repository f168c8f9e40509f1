// @hookd/client against a live hookd (started by clients/test.sh): a tenant,
// a signed event, its dead letter and its redelivery, paging, errors, TLS.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, test } from "node:test";

import { Webhook } from "standardwebhooks";

import { Code, ConnectError, delivery, HookdClient, route } from "../src/index.js";

const env = process.env;
const live = env.HOOKD_GRPC_ADDR
  ? {
      grpcAddr: env.HOOKD_GRPC_ADDR,
      httpUrl: env.HOOKD_HTTP_URL ?? "",
      token: env.HOOKD_ADMIN_TOKEN ?? "",
      sinkUrl: env.HOOKD_SINK_URL ?? "",
      tlsAddr: env.HOOKD_TLS_GRPC_ADDR ?? "",
      tlsCaFile: env.HOOKD_TLS_CA_FILE ?? "",
    }
  : undefined;

/** Polls `probe` until it returns something, at most `withinMs`. */
async function eventually<T>(what: string, probe: () => Promise<T | undefined>, withinMs = 30_000): Promise<T> {
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline) {
    const found = await probe();
    if (found !== undefined) return found;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`${what}: not within ${withinMs} ms`);
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
}

/** POSTs `body` to the tenant's ingest URL, signed the Standard Webhooks way. */
async function sendSigned(httpUrl: string, tenantId: string, secret: string, eventId: string, body: string) {
  const now = new Date();
  const response = await fetch(`${httpUrl}/hooks/${tenantId}`, {
    method: "POST",
    body,
    headers: {
      "content-type": "application/json",
      "webhook-id": eventId,
      "webhook-timestamp": String(Math.floor(now.getTime() / 1000)),
      "webhook-signature": new Webhook(secret).sign(eventId, now, body),
    },
  });
  assert.equal(response.status, 202, await response.clone().text());
  return (await response.json()) as { delivery_id: string };
}

async function sinkCount(sinkUrl: string, path: string): Promise<number> {
  return Number(await (await fetch(`${sinkUrl}/seen${path}`)).text());
}

async function refusal(call: Promise<unknown>): Promise<ConnectError> {
  try {
    await call;
  } catch (err) {
    assert.ok(err instanceof ConnectError, String(err));
    return err;
  }
  throw new Error("the call must fail");
}

const newTenantId = () => `ts-${randomUUID().slice(0, 12)}`;

describe("against a live hookd", { skip: live === undefined && "no live hookd: run clients/test.sh" }, () => {
  const { grpcAddr, httpUrl, token, sinkUrl, tlsAddr, tlsCaFile } = live ?? {
    grpcAddr: "",
    httpUrl: "",
    token: "",
    sinkUrl: "",
    tlsAddr: "",
    tlsCaFile: "",
  };

  test("a dead letter is redelivered", async () => {
    const client = new HookdClient({ address: grpcAddr, token });
    try {
      const tenantId = newTenantId();
      const path = `/${tenantId}`;
      const created = await client.createTenant(tenantId, { destinationUrl: `${sinkUrl}${path}` });
      assert.equal(created.tenant?.scheme, "standard");
      assert.match(created.secret, /^whsec_/);

      const { delivery_id: deliveryId } = await sendSigned(httpUrl, tenantId, created.secret, "evt_ts_1", '{"type":"order.paid"}');
      const listed = (await collect(client.iterDeliveries(tenantId))).filter((d) => d.deliveryId === deliveryId);
      assert.deepEqual(listed.map((d) => d.eventId), ["evt_ts_1"]);

      const dead = await eventually("the delivery answered 410 became a dead letter", async () =>
        (await collect(client.iterDeadLetters(tenantId))).find((d) => d.deliveryId === deliveryId),
      );
      assert.equal(dead.lastStatusCode, 410);
      assert.match(dead.reason, /^permanent failure/);
      assert.equal(await sinkCount(sinkUrl, path), 1);

      const answer = await client.redeliver(tenantId, [deliveryId]);
      assert.equal(answer.deliveryIds.length, 1);
      const redeliveryId = answer.deliveryIds[0] ?? "";
      const original = await client.getDelivery(tenantId, deliveryId);
      assert.equal(original.status, delivery.DeliveryStatus.REDELIVERED);
      assert.equal(original.redeliveredAs, redeliveryId);
      const redelivery = (await collect(client.iterDeliveries(tenantId))).find((d) => d.deliveryId === redeliveryId);
      assert.equal(redelivery?.redeliveryOf, deliveryId);
      assert.equal(redelivery?.eventId, "evt_ts_1");

      const again = await eventually("the redelivery was sent and dead-lettered too", async () => {
        const d = await client.getDelivery(tenantId, redeliveryId);
        return d.status === delivery.DeliveryStatus.DEAD ? d : undefined;
      });
      assert.equal(again.attempts[0]?.statusCode, 410);
      assert.equal(await sinkCount(sinkUrl, path), 2);
      const deadNow = await collect(client.iterDeadLetters(tenantId));
      assert.deepEqual(deadNow.map((d) => d.deliveryId), [redeliveryId]);
    } finally {
      client.close();
    }
  });

  test("the iterators walk every page", async () => {
    const client = new HookdClient({ address: grpcAddr, token });
    try {
      const ids = [newTenantId(), newTenantId(), newTenantId()].sort();
      for (const id of ids) await client.createTenant(id);
      const seen = (await collect(client.iterTenants(1))).map((t) => t.tenantId);
      assert.deepEqual(seen.filter((t) => ids.includes(t)), ids);
      assert.deepEqual(seen, [...seen].sort());

      const created = await client.createTenant(newTenantId());
      const tenantId = created.tenant?.tenantId ?? "";
      const sent: string[] = [];
      for (const n of [0, 1, 2]) {
        sent.push((await sendSigned(httpUrl, tenantId, created.secret, `evt_page_${n}`, "{}")).delivery_id);
      }
      const listed = (await collect(client.iterDeliveries(tenantId, { pageSize: 2 }))).map((d) => d.deliveryId);
      // Newest first: by delivery id, which starts with the time of receipt.
      assert.deepEqual(listed, [...sent].sort().reverse(), "every page, newest first");
    } finally {
      client.close();
    }
  });

  test("the live feed streams what happens", async () => {
    const client = new HookdClient({ address: grpcAddr, token });
    const stop = new AbortController();
    try {
      const created = await client.createTenant(newTenantId(), { destinationUrl: `${sinkUrl}/watched` });
      const tenantId = created.tenant?.tenantId ?? "";
      let opened = () => {};
      const open = new Promise<void>((resolve) => (opened = resolve));
      const events = client.deliveries
        .watchDeliveries({ tenantId }, { signal: stop.signal, timeoutMs: 30_000, onHeader: () => opened() })
        [Symbol.asyncIterator]();
      const first = events.next();
      await open; // subscribed: every event from now on is streamed
      const { delivery_id: deliveryId } = await sendSigned(httpUrl, tenantId, created.secret, "evt_watched", "{}");
      const kinds: delivery.DeliveryEventKind[] = [];
      for (let next = await first; !next.done; next = await events.next()) {
        assert.equal(next.value.deliveryId, deliveryId);
        kinds.push(next.value.kind);
        if (next.value.kind === delivery.DeliveryEventKind.DEAD_LETTERED) break;
      }
      assert.deepEqual(kinds, [delivery.DeliveryEventKind.ACCEPTED, delivery.DeliveryEventKind.DEAD_LETTERED]);
    } finally {
      stop.abort();
      client.close();
    }
  });

  test("stored events are replayed into a new route", async () => {
    const client = new HookdClient({ address: grpcAddr, token });
    try {
      const sinceUnixMs = BigInt(Date.now() - 60_000);
      const created = await client.createTenant(newTenantId(), { destinationUrl: `${sinkUrl}/replayed` });
      const tenantId = created.tenant?.tenantId ?? "";
      for (const n of [0, 1, 2, 3, 4]) {
        await sendSigned(httpUrl, tenantId, created.secret, `evt_replay_${n}`, '{"type":"order.paid"}');
      }
      await client.routes.createRoute({ tenantId, name: "audit", destinationUrl: `${sinkUrl}/audit` });

      const counted = await client.replayToRoute(tenantId, "audit", { sinceUnixMs, eventType: "order.paid", dryRun: true });
      assert.equal(counted.count, 5n);
      assert.equal(counted.replay, undefined);
      // One a second: it is still running while it is steered.
      const started = await client.replayToRoute(tenantId, "audit", { sinceUnixMs, ratePerSecond: 1 });
      const replayId = started.replay?.id ?? "";
      assert.match(replayId, /^rpl_/);
      assert.equal(started.replay?.state, route.ReplayState.RUNNING);
      assert.equal((await client.pauseReplay(tenantId, replayId)).state, route.ReplayState.PAUSED);
      assert.equal((await client.resumeReplay(tenantId, replayId)).state, route.ReplayState.RUNNING);
      const cancelled = await client.cancelReplay(tenantId, replayId);
      assert.equal(cancelled.state, route.ReplayState.CANCELLED);
      assert.ok(cancelled.finishedAtMs > 0n);
      assert.equal((await client.getReplay(tenantId, replayId)).state, route.ReplayState.CANCELLED);
      assert.deepEqual((await client.listReplays(tenantId, "audit")).map((r) => r.id), [replayId]);
      assert.deepEqual(await client.listReplays(tenantId, "default"), []);

      assert.equal((await refusal(client.resumeReplay(tenantId, replayId))).code, Code.FailedPrecondition);
      assert.equal((await refusal(client.replayToRoute(tenantId, "default", { sinceUnixMs }))).code, Code.InvalidArgument);
    } finally {
      client.close();
    }
  });

  test("errors carry the gRPC code", async () => {
    const client = new HookdClient({ address: grpcAddr, token });
    const stranger = new HookdClient({ address: grpcAddr, token: "hka_not_the_admin_token_0123456789" });
    try {
      assert.equal((await refusal(client.getTenant("no-such-tenant"))).code, Code.NotFound);
      const invalid = await refusal(client.tenants.createTenant({ tenantId: "Not Valid" }));
      assert.equal(invalid.code, Code.InvalidArgument);
      assert.match(invalid.rawMessage, /tenant_id/);
      assert.equal((await refusal(stranger.iterTenants().next())).code, Code.Unauthenticated);
    } finally {
      client.close();
      stranger.close();
    }
  });

  test("TLS with a CA file", { skip: tlsAddr === "" && "no hookd over TLS" }, async () => {
    const client = new HookdClient({ address: tlsAddr, token, tls: { ca: { file: tlsCaFile } } });
    const untrusting = new HookdClient({ address: tlsAddr, token, tls: true, timeoutMs: 10_000 });
    try {
      const created = await client.createTenant("ts-tls");
      assert.equal((await client.getTenant("ts-tls")).tenantId, created.tenant?.tenantId);
      // Connect reports Node's failed certificate check as INTERNAL, with Node's reason.
      const untrusted = await refusal(untrusting.getTenant("ts-tls"));
      assert.equal(untrusted.code, Code.Internal, untrusted.message);
      assert.match(untrusted.rawMessage, /certificate/);
    } finally {
      client.close();
      untrusting.close();
    }
  });
});
