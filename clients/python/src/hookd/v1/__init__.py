"""hookd.v1: the generated messages (*_pb2) and stubs (*_pb2_grpc); see generate.sh."""
