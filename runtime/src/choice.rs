//! A closed set of named values (`--gpu-sync block`, `task = "detect"`, `--scenario server`): the
//! names flags, manifests and reports spell them with, kept beside the type. The command line turns
//! each into a clap value in `cli/choices.rs`, so the library needs no clap.

pub trait Choice: Copy + 'static {
    /// The values a user picks from, in the order `--help` lists them.
    const ALL: &'static [Self];

    /// The value's name, as flags, manifests and reports spell it.
    fn name(self) -> &'static str;

    /// One line for `--help`; None where the name says it all.
    fn help(self) -> Option<&'static str> {
        None
    }
}
