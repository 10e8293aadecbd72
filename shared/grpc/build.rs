//! Compiles the vendored A2A proto (`proto/a2a.proto` and the googleapis
//! files it imports) into a descriptor set the gRPC binding reads its messages through. A pure-Rust
//! compiler (protox): no `protoc` to install.

fn main() {
    println!("cargo:rerun-if-changed=proto");
    {
        let set = protox::compile(["a2a.proto"], ["proto"]).unwrap_or_else(|e| panic!("proto/a2a.proto: {e}"));
        let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap_or_else(|_| ".".into()));
        std::fs::write(out.join("a2a.fds"), prost::Message::encode_to_vec(&set))
            .unwrap_or_else(|e| panic!("writing the descriptor set: {e}"));
    }
}
