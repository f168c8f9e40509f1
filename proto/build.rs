//! Compiles `hookd/v1/*.proto` with protox and keeps the encoded descriptor
//! set; with the `json` feature, also the proto3 JSON mapping.

use std::{env, fs, path::PathBuf};

/// Compiles `hookd/v1/*.proto` with protox (pure Rust, no protoc needed), and
/// keeps the encoded descriptor set for gRPC server reflection; with the
/// `json` feature, also generates the proto3 JSON mapping (pbjson) from it.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protos = [
        "hookd/v1/tenant.proto",
        "hookd/v1/secret.proto",
        "hookd/v1/token.proto",
        "hookd/v1/delivery.proto",
        "hookd/v1/consumer.proto",
        "hookd/v1/contract.proto",
        "hookd/v1/rejection.proto",
        "hookd/v1/route.proto",
        "hookd/v1/alert.proto",
    ];
    for proto in protos {
        println!("cargo:rerun-if-changed={proto}");
    }
    let mut compiler = protox::Compiler::new(["."])?;
    compiler
        .include_source_info(true)
        .include_imports(true)
        .open_files(protos)?;
    let out_dir = PathBuf::from(env::var("OUT_DIR")?);
    let descriptors = compiler.encode_file_descriptor_set();
    fs::write(out_dir.join("hookd_descriptor.bin"), &descriptors)?;
    // Requests that may carry a secret get a hand-written, redacting Debug
    // (src/redacted.rs).
    tonic_prost_build::configure()
        .skip_debug([
            "hookd.v1.CreateTenantRequest",
            "hookd.v1.RotateSecretRequest",
            "hookd.v1.AlertSink",
            "hookd.v1.SetAlertSettingsResponse",
        ])
        .compile_fds(compiler.file_descriptor_set())?;
    #[cfg(feature = "json")]
    pbjson_build::Builder::new()
        .register_descriptors(&descriptors)?
        .build(&[".hookd.v1"])?;
    Ok(())
}
