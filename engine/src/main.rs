mod allocator;

fn main() -> std::process::ExitCode {
    rocflow::cli::main()
}
