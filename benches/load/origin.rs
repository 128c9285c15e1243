//! The load benchmark's stand-in for the internet: the tests' fake origin
//! registry (real TLS, real signatures), serving `registry.origin.test`'s
//! `acme/small` (20 versions, 3 platforms each) and `acme/big` (one
//! version with a 48 MiB `linux_amd64` archive) until it is killed.
//!
//! Usage: bench-origin PORT `CA_FILE` [`BIG_MIB`]

#[path = "../../tests/common/mod.rs"]
mod common;

use common::{publish_big, FakeOrigin, Signer, TestCa};

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(port), Some(ca_file)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: bench-origin PORT CA_FILE [BIG_MIB]");
        std::process::exit(2);
    };
    let big_mib: usize = args.get(3).map_or(48, |m| m.parse().expect("BIG_MIB"));
    let ca = TestCa::new();
    std::fs::write(ca_file, &ca.ca_pem).expect("writing CA_FILE");
    let origin =
        FakeOrigin::start_on(&ca, format!("127.0.0.1:{port}").parse().expect("PORT")).await;
    // RSA: the benchmark's direct `terraform init` checks the signature itself.
    let signer = Signer::rsa("bench");
    for minor in 0..20 {
        let v = format!("1.{minor}.0");
        origin.publish(
            "acme",
            "small",
            &v,
            &["linux_amd64", "darwin_arm64", "windows_amd64"],
            &signer,
            &[&signer],
        );
    }
    publish_big(&origin, &signer, "big", &["1.0.0"], big_mib * 1024 * 1024);
    println!("ready on 127.0.0.1:{}", origin.addr.port());
    tokio::signal::ctrl_c().await.ok();
    // SIGTERM and SIGKILL end the process without reaching here.
}
