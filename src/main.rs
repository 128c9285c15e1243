//! The `tfmirror` command; everything it does lives in the library.

fn main() -> std::process::ExitCode {
    tfmirror::commands::main()
}
