"""Protobuf messages and gRPC stubs of hookd's control plane (package hookd.v1), generated."""
