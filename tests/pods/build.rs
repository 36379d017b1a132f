//! The server side of kubelet's PodResources API, from the file the agent
//! vendors: the test kubelet speaks exactly the protocol the agent reads.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "../../host/proto/podresources/v1/api.proto";
    println!("cargo:rerun-if-changed={proto}");
    tonic_prost_build::configure()
        .build_client(false)
        .compile_protos(&[proto], &["../../host/proto/podresources/v1"])?;
    Ok(())
}
