"""Creates a hookd tenant over gRPC from Python, with stubs generated from proto/.

Generate the stubs first (see README, "gRPC from other languages"):

    python3 -m grpc_tools.protoc -I proto --python_out=gen --grpc_python_out=gen proto/hookd/v1/*.proto

then run:

    PYTHONPATH=gen python3 examples/python/create_tenant.py 127.0.0.1:50051 "$HOOKD_ADMIN_TOKEN" my-tenant
"""

import sys

import grpc

from hookd.v1 import tenant_pb2, tenant_pb2_grpc


def main() -> int:
    endpoint, token, tenant_id = sys.argv[1:4]
    auth = [("authorization", f"Bearer {token}")]
    with grpc.insecure_channel(endpoint) as channel:
        tenants = tenant_pb2_grpc.TenantServiceStub(channel)
        created = tenants.CreateTenant(
            tenant_pb2.CreateTenantRequest(tenant_id=tenant_id, scheme="standard"),
            metadata=auth,
        )
        print(f"created tenant {created.tenant.tenant_id}: POST {created.tenant.ingest_path}, kid {created.kid}")
        fetched = tenants.GetTenant(tenant_pb2.GetTenantRequest(tenant_id=tenant_id), metadata=auth)
        assert fetched.tenant_id == tenant_id and fetched.scheme == "standard", fetched
        try:
            tenants.GetTenant(tenant_pb2.GetTenantRequest(tenant_id=tenant_id), metadata=[])
        except grpc.RpcError as err:
            assert err.code() == grpc.StatusCode.UNAUTHENTICATED, err
            print("without a token: UNAUTHENTICATED, as expected")
        else:
            raise AssertionError("a call without a token must be refused")
    return 0


if __name__ == "__main__":
    sys.exit(main())
