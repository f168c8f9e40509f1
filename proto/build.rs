//! Compiles `hookd/v1/*.proto` with protox (pure Rust, no protoc needed).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protos = [
        "hookd/v1/tenant.proto",
        "hookd/v1/secret.proto",
        "hookd/v1/token.proto",
        "hookd/v1/delivery.proto",
        "hookd/v1/consumer.proto",
    ];
    for proto in protos {
        println!("cargo:rerun-if-changed={proto}");
    }
    let fds = protox::compile(protos, ["."])?;
    tonic_prost_build::configure().compile_fds(fds)?;
    Ok(())
}
