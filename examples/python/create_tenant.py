"""Creates a hookd tenant over gRPC from Python, with stubs generated from proto/.

Generate the stubs first (see README, "gRPC from other languages"):

    python3 -m grpc_tools.protoc -I proto --python_out=gen --grpc_python_out=gen proto/hookd/v1/*.proto

then run:

    PYTHONPATH=gen python3 examples/python/create_tenant.py 127.0.0.1:50051 "$HOOKD_ADMIN_TOKEN" my-tenant

For a hookd with `[grpc.tls]`, add `--ca ca.pem` (the CA that signed hookd's
certificate) and, when it sets `client_ca_file`, `--cert client.pem --key client.key`.
"""

import argparse
import sys

import grpc

from hookd.v1 import tenant_pb2, tenant_pb2_grpc

# hookd answers up to 80 MiB per response (one webhook body at the largest body limit);
# grpcio's default receive limit is 4 MiB.
MAX_RESPONSE_BYTES = 80 * 1024 * 1024


def read(path):
    if path is None:
        return None
    with open(path, "rb") as f:
        return f.read()


def open_channel(endpoint, ca, cert, key):
    options = [("grpc.max_receive_message_length", MAX_RESPONSE_BYTES)]
    if ca is None and cert is None:
        return grpc.insecure_channel(endpoint, options=options)
    credentials = grpc.ssl_channel_credentials(
        root_certificates=read(ca), private_key=read(key), certificate_chain=read(cert)
    )
    return grpc.secure_channel(endpoint, credentials, options=options)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("endpoint")
    parser.add_argument("token")
    parser.add_argument("tenant_id")
    parser.add_argument("--ca", help="PEM CA certificate hookd's certificate chains to")
    parser.add_argument("--cert", help="PEM client certificate (with --key)")
    parser.add_argument("--key", help="PEM private key of --cert")
    args = parser.parse_args()
    endpoint, token, tenant_id = args.endpoint, args.token, args.tenant_id
    auth = [("authorization", f"Bearer {token}")]
    with open_channel(endpoint, args.ca, args.cert, args.key) as channel:
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
