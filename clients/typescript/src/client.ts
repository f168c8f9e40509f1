/**
 * HookdClient: one HTTP/2 connection to hookd's gRPC control plane with
 * bearer auth, TLS, every service as a typed Connect client and async
 * iterators over the paged lists.
 * @module
 */
import { readFileSync } from "node:fs";

import type { MessageInitShape } from "@bufbuild/protobuf";
import { type Client, createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";

import { bearer } from "./auth.js";
import { ConsumerService } from "./gen/hookd/v1/consumer_pb.js";
import { AlertService } from "./gen/hookd/v1/alert_pb.js";
import { ContractService } from "./gen/hookd/v1/contract_pb.js";
import {
  type CancelDeliveriesResponse,
  type DeadLetter,
  type Delivery,
  DeliveryService,
  type Event,
  type ListDeadLettersRequestSchema,
  type ListDeliveriesRequestSchema,
  type RedeliverResponse,
  type RetryNowResponse,
} from "./gen/hookd/v1/delivery_pb.js";
import { RejectionService } from "./gen/hookd/v1/rejection_pb.js";
import {
  type Replay,
  type ReplayToRouteRequestSchema,
  type ReplayToRouteResponse,
  type Route,
  type RouteMetrics,
  RouteService,
} from "./gen/hookd/v1/route_pb.js";
import { SecretService } from "./gen/hookd/v1/secret_pb.js";
import {
  type CreateTenantRequestSchema,
  type CreateTenantResponse,
  type Tenant,
  TenantService,
} from "./gen/hookd/v1/tenant_pb.js";
import { TokenService } from "./gen/hookd/v1/token_pb.js";
import { everyPage } from "./paging.js";

/** PEM given as its contents, or as `{ file }`, the path of a file holding it. */
export type Pem = string | Buffer | { file: string };

/** Where hookd's control plane is and how to reach it. */
export interface HookdClientOptions {
  /** `host:port` of hookd's gRPC listener (`[grpc] addr`). */
  address: string;
  /** The admin token or a tenant token, sent as `authorization: Bearer`. */
  token: string;
  /**
   * TLS (hookd's `[grpc.tls]`): `true` trusts the system's roots; `ca` trusts
   * that CA instead; `cert` and `key` present a client certificate to a
   * hookd that sets `client_ca_file`. Absent or `false`: plaintext HTTP/2.
   */
  tls?: boolean | { ca?: Pem; cert?: Pem; key?: Pem };
  /** Bound of each unary call, in milliseconds; default 30 000. */
  timeoutMs?: number;
}

/** The fields of CreateTenantRequest besides the tenant id. */
export type TenantSettings = Omit<MessageInitShape<typeof CreateTenantRequestSchema>, "$typeName" | "tenantId">;
/** ListDeliveries' filters and page size. */
export type DeliveryFilter = Omit<MessageInitShape<typeof ListDeliveriesRequestSchema>, "$typeName" | "tenantId" | "pageToken">;
/** ListDeadLetters' filters and page size. */
export type DeadLetterFilter = Omit<MessageInitShape<typeof ListDeadLettersRequestSchema>, "$typeName" | "tenantId" | "pageToken">;
/** ReplayToRoute's window (`sinceUnixMs` required), filters, rate and `dryRun`. */
export type ReplayWindow = Omit<MessageInitShape<typeof ReplayToRouteRequestSchema>, "$typeName" | "tenantId" | "route">;

function pem(value: Pem | undefined): string | Buffer | undefined {
  return value !== undefined && typeof value === "object" && "file" in value ? readFileSync(value.file) : value;
}

/**
 * A client of hookd's gRPC control plane. The services are Connect clients
 * (methods in camelCase, e.g. `client.tenants.getTenant({ tenantId })`);
 * a failed call rejects with `ConnectError`, whose `code` is the gRPC status
 * (`Code.NotFound`, ...) and `rawMessage` hookd's reason. Call `close()`
 * when done, so the connection does not keep Node running.
 */
export class HookdClient {
  /** TenantService: create, read, change and delete tenants. */
  readonly tenants: Client<typeof TenantService>;
  /** SecretService: rotate, list and revoke signing secrets. */
  readonly secrets: Client<typeof SecretService>;
  /** TokenService: tenant-scoped tokens. */
  readonly tokens: Client<typeof TokenService>;
  /** DeliveryService: deliveries, dead letters, redelivery, the live feed. */
  readonly deliveries: Client<typeof DeliveryService>;
  /** RouteService: a tenant's routes. */
  readonly routes: Client<typeof RouteService>;
  /** AlertService: a tenant's alerts and where they are sent. */
  readonly alerts: Client<typeof AlertService>;
  /** ContractService: event contracts. */
  readonly contracts: Client<typeof ContractService>;
  /** ConsumerService: pull, ack and nack for pull-mode tenants. */
  readonly consumer: Client<typeof ConsumerService>;
  /** RejectionService: payloads hookd refused. */
  readonly rejections: Client<typeof RejectionService>;
  readonly #sessions: Http2SessionManager;

  constructor(options: HookdClientOptions) {
    const tls = options.tls === true ? {} : options.tls === false ? undefined : options.tls;
    const baseUrl = `${tls === undefined ? "http" : "https"}://${options.address}`;
    const nodeOptions = tls === undefined ? {} : { ca: pem(tls.ca), cert: pem(tls.cert), key: pem(tls.key) };
    this.#sessions = new Http2SessionManager(baseUrl, undefined, nodeOptions);
    const transport = createGrpcTransport({
      baseUrl,
      sessionManager: this.#sessions,
      interceptors: [bearer(options.token)],
      defaultTimeoutMs: options.timeoutMs ?? 30_000,
    });
    this.tenants = createClient(TenantService, transport);
    this.secrets = createClient(SecretService, transport);
    this.tokens = createClient(TokenService, transport);
    this.deliveries = createClient(DeliveryService, transport);
    this.routes = createClient(RouteService, transport);
    this.alerts = createClient(AlertService, transport);
    this.contracts = createClient(ContractService, transport);
    this.consumer = createClient(ConsumerService, transport);
    this.rejections = createClient(RejectionService, transport);
  }

  /** Closes the connection; calls in progress fail. */
  close(): void {
    this.#sessions.abort();
  }

  /**
   * Creates a tenant (admin token only), scheme `standard` unless `settings`
   * say otherwise. The response holds its first signing secret and its
   * destination secret, shown this once.
   */
  createTenant(tenantId: string, settings: TenantSettings = {}): Promise<CreateTenantResponse> {
    return this.tenants.createTenant({ scheme: "standard", ...settings, tenantId });
  }

  /** Reads one tenant. */
  getTenant(tenantId: string): Promise<Tenant> {
    return this.tenants.getTenant({ tenantId });
  }

  /** Every tenant the token may see, in id order, over every page. */
  iterTenants(pageSize = 0): AsyncGenerator<Tenant, void, undefined> {
    return everyPage(async (pageToken) => {
      const page = await this.tenants.listTenants({ pageSize, pageToken });
      return { items: page.tenants, nextPageToken: page.nextPageToken };
    });
  }

  /** A tenant's deliveries of one route, newest first, over every page. */
  iterDeliveries(tenantId: string, filter: DeliveryFilter = {}): AsyncGenerator<Delivery, void, undefined> {
    return everyPage(async (pageToken) => {
      const page = await this.deliveries.listDeliveries({ ...filter, tenantId, pageToken });
      return { items: page.deliveries, nextPageToken: page.nextPageToken };
    });
  }

  /** A tenant's dead letters of one route, most recently dead first, over every page. */
  iterDeadLetters(tenantId: string, filter: DeadLetterFilter = {}): AsyncGenerator<DeadLetter, void, undefined> {
    return everyPage(async (pageToken) => {
      const page = await this.deliveries.listDeadLetters({ ...filter, tenantId, pageToken });
      return { items: page.deadLetters, nextPageToken: page.nextPageToken };
    });
  }

  /** One delivery with all its attempts. */
  getDelivery(tenantId: string, deliveryId: string): Promise<Delivery> {
    return this.deliveries.getDelivery({ tenantId, deliveryId });
  }

  /** The event a delivery carries: its stored headers and its body exactly as received. */
  getEvent(tenantId: string, deliveryId: string): Promise<Event> {
    return this.deliveries.getEvent({ tenantId, deliveryId });
  }

  /** Redelivers dead (or delivered) deliveries by id; the answer lists the new ids in order. */
  redeliver(tenantId: string, deliveryIds: readonly string[]): Promise<RedeliverResponse> {
    return this.deliveries.redeliver({ tenantId, deliveryIds: [...deliveryIds] });
  }

  /**
   * Attempts every delivery of `route` (empty: `default`) waiting for its retry now, without
   * counting an extra attempt (at most 1,000 per call; `more` says others wait); `dryRun` only
   * counts them.
   */
  retryNow(tenantId: string, route = "", dryRun = false): Promise<RetryNowResponse> {
    return this.deliveries.retryNow({ tenantId, route, allWaiting: true, dryRun });
  }

  /**
   * Cancels every pending delivery of `route` (empty: `default`), of `eventType` if given (at
   * most 1,000 per call): each becomes a dead letter with reason `cancelled`, nothing is sent;
   * `dryRun` only counts them.
   */
  cancelPending(
    tenantId: string,
    route = "",
    eventType = "",
    dryRun = false,
  ): Promise<CancelDeliveriesResponse> {
    return this.deliveries.cancelDeliveries({ tenantId, route, eventType, dryRun, allPending: true });
  }

  /**
   * Every delivery whose id is `id`, or of an event whose id is `id`, on every tenant the token
   * may read (the admin token: all; a tenant token: its own).
   */
  async searchDeliveries(id: string): Promise<Delivery[]> {
    return (await this.deliveries.searchDeliveries({ id })).deliveries;
  }

  /** A route's numbers by minute (`stepSecs` 60) or hour (3600) over `spanSecs`, and its queue now. */
  routeMetrics(
    tenantId: string,
    name = "default",
    stepSecs = 60,
    spanSecs = 3600,
  ): Promise<RouteMetrics> {
    return this.routes.getRouteMetrics({ tenantId, name, stepSecs, spanSecs });
  }

  /**
   * Holds a route: events are still accepted and stored on it, nothing is sent until
   * `resumeRoute` (every replica within a second).
   */
  pauseRoute(tenantId: string, name = "default"): Promise<Route> {
    return this.routes.pauseRoute({ tenantId, name });
  }

  /**
   * Lets a paused route send again, its forwards in flight rising from one to its limit over
   * `rampSecs` (absent: 60; 0: at once).
   */
  resumeRoute(tenantId: string, name = "default", rampSecs?: number): Promise<Route> {
    return this.routes.resumeRoute({ tenantId, name, rampSecs });
  }

  /**
   * Replays the events the tenant accepted in `window` (from `sinceUnixMs` to `untilUnixMs`,
   * absent: now) into `route` (not `default`), oldest first, at most `ratePerSecond` deliveries a
   * second (absent: 100): each gets one delivery on the route if its filter passes it and the
   * route has none of it yet. `eventType` and `bodyPointer` with `bodyValueJson` narrow the
   * events; `dryRun` only counts the deliveries it would make (`count`), else `replay` is the
   * replay made.
   */
  replayToRoute(tenantId: string, route: string, window: ReplayWindow): Promise<ReplayToRouteResponse> {
    return this.routes.replayToRoute({ ...window, tenantId, route });
  }

  /** One replay and how far it got. */
  getReplay(tenantId: string, replayId: string): Promise<Replay> {
    return this.routes.getReplay({ tenantId, replayId });
  }

  /** A tenant's replays (into `route` only, if given), newest first. */
  async listReplays(tenantId: string, route = ""): Promise<Replay[]> {
    return (await this.routes.listReplays({ tenantId, route })).replays;
  }

  /** Stops a running replay where it is. */
  pauseReplay(tenantId: string, replayId: string): Promise<Replay> {
    return this.routes.pauseReplay({ tenantId, replayId });
  }

  /** Runs a paused (or failed) replay on from where it stopped. */
  resumeReplay(tenantId: string, replayId: string): Promise<Replay> {
    return this.routes.resumeReplay({ tenantId, replayId });
  }

  /** Ends a replay for good; the deliveries it made stay. */
  cancelReplay(tenantId: string, replayId: string): Promise<Replay> {
    return this.routes.cancelReplay({ tenantId, replayId });
  }
}
