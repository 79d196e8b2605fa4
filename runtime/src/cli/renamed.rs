//! Flags renamed so that one idea has one spelling everywhere: the old spellings still parse
//! (clap aliases, hidden from `--help`) until 0.2, and each use says what to write instead.

use std::ffi::OsString;

/// (command, old spelling, new spelling).
const RENAMED: &[(&str, &str, &str)] = &[
    ("build-engine", "--onnx", "--model"),
    ("build-engine", "--precision", "--trt-precision"),
    ("build-engine", "--dla", "--trt-dla"),
    ("build-engine", "--workspace", "--trt-workspace-mb"),
    ("build-engine", "--sparsity", "--trt-sparsity"),
    ("build-engine", "--timing-cache", "--trt-timing-cache"),
];

/// A warning for each old spelling in `args` (the program name first, as the OS gives them).
pub fn warnings(args: &[OsString]) -> Vec<String> {
    let args: Vec<&str> = args.iter().skip(1).filter_map(|a| a.to_str()).collect();
    let Some(command) = args.iter().find(|a| !a.starts_with('-')) else { return Vec::new() };
    // Past `--` everything is a value.
    let flags = args.iter().take_while(|a| **a != "--");
    flags
        .filter_map(|arg| {
            let flag = arg.split_once('=').map_or(*arg, |(flag, _)| flag);
            RENAMED.iter().find(|(c, old, _)| c == command && *old == flag)
        })
        .map(|(command, old, new)| format!("{command} {old} is now {new}; {old} goes in edgert 0.2"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::warnings;

    fn args(text: &str) -> Vec<std::ffi::OsString> {
        text.split(' ').map(Into::into).collect()
    }

    #[test]
    fn old_spellings_of_the_command_are_named_with_their_new_ones() {
        let w = warnings(&args("edgert build-engine --onnx m.onnx --dla=0 --out e.plan"));
        assert_eq!(
            w,
            [
                "build-engine --onnx is now --model; --onnx goes in edgert 0.2",
                "build-engine --dla is now --trt-dla; --dla goes in edgert 0.2"
            ]
        );
    }

    #[test]
    fn new_spellings_other_commands_and_values_are_left_alone() {
        assert!(warnings(&args("edgert build-engine --model m.onnx --trt-dla 0 --out e.plan")).is_empty());
        assert!(warnings(&args("edgert run --precision x")).is_empty());
        assert!(warnings(&args("edgert build-engine --model m.onnx -- --onnx")).is_empty());
        assert!(warnings(&args("edgert")).is_empty());
    }
}
