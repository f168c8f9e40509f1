/**
 * `@hookd/client`: a typed client for hookd's gRPC control plane, over
 * Connect's gRPC transport for Node (HTTP/2). The generated messages and
 * services of `hookd.v1` are re-exported as namespaces (`tenant`,
 * `delivery`, ...).
 * @module
 */
export { Code, ConnectError } from "@connectrpc/connect";
export { bearer } from "./auth.js";
export {
  type DeadLetterFilter,
  type DeliveryFilter,
  HookdClient,
  type HookdClientOptions,
  type Pem,
  type ReplayWindow,
  type TenantSettings,
} from "./client.js";
export * as consumer from "./gen/hookd/v1/consumer_pb.js";
export * as contract from "./gen/hookd/v1/contract_pb.js";
export * as delivery from "./gen/hookd/v1/delivery_pb.js";
export * as rejection from "./gen/hookd/v1/rejection_pb.js";
export * as route from "./gen/hookd/v1/route_pb.js";
export * as secret from "./gen/hookd/v1/secret_pb.js";
export * as tenant from "./gen/hookd/v1/tenant_pb.js";
export * as token from "./gen/hookd/v1/token_pb.js";
export { everyPage, type Page } from "./paging.js";
