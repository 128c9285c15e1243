//! The `tfmirror` command; everything it does lives in the library.

/// mimalloc instead of the C library's allocator: a request makes and
/// frees many small buffers, and mimalloc's thread-local free lists make
/// that cheaper (BENCHMARKS.md has the figures).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    tfmirror::commands::main()
}
