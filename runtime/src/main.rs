fn main() -> std::process::ExitCode {
    edgert::cli::main()
}
