//! The library's closed sets of values (`Choice`) as clap values: `#[arg(value_enum)]` lists
//! and parses them by the names the library gives them.

use clap::builder::PossibleValue;

#[cfg(feature = "ort")]
use crate::backend::ort::Provider;
#[cfg(feature = "tensorrt")]
use crate::backend::tensorrt::BuildPrecision;
use crate::bench::report::Kind;
use crate::capture::source::launch::RtspTransport;
use crate::choice::Choice;
use crate::gpu_sync::GpuSync;
use crate::model::manifest::Task;
use crate::stream::queue::DropPolicy;

fn possible_value<C: Choice>(choice: C) -> PossibleValue {
    let value = PossibleValue::new(choice.name());
    match choice.help() {
        Some(help) => value.help(help),
        None => value,
    }
}

/// `impl clap::ValueEnum` for each type: a blanket impl over `Choice` is not allowed (both traits
/// would have to be this crate's).
macro_rules! value_enum {
    ($($(#[$cfg:meta])* $choice:ty),* $(,)?) => {$(
        $(#[$cfg])*
        impl clap::ValueEnum for $choice {
            fn value_variants<'a>() -> &'a [Self] {
                <$choice as Choice>::ALL
            }

            fn to_possible_value(&self) -> Option<PossibleValue> {
                Some(possible_value(*self))
            }
        }
    )*};
}

value_enum!(
    #[cfg(feature = "ort")]
    Provider,
    #[cfg(feature = "tensorrt")]
    BuildPrecision,
    Kind,
    RtspTransport,
    GpuSync,
    Task,
    DropPolicy,
);

#[cfg(test)]
mod tests {
    use clap::ValueEnum;

    use super::*;

    fn round_trips<C: Choice + ValueEnum + PartialEq + std::fmt::Debug>() {
        for &choice in C::ALL {
            assert_eq!(C::from_str(choice.name(), false), Ok(choice), "{}", choice.name());
        }
        let names: std::collections::HashSet<_> = C::ALL.iter().map(|c| c.name()).collect();
        assert_eq!(names.len(), C::ALL.len(), "two values share a name");
    }

    #[test]
    fn every_choice_parses_back_from_its_name() {
        #[cfg(feature = "ort")]
        round_trips::<Provider>();
        #[cfg(feature = "tensorrt")]
        round_trips::<BuildPrecision>();
        round_trips::<Kind>();
        round_trips::<RtspTransport>();
        round_trips::<GpuSync>();
        round_trips::<Task>();
        round_trips::<DropPolicy>();
    }

    #[test]
    fn a_value_outside_the_set_is_refused() {
        #[cfg(feature = "tensorrt")]
        assert!(BuildPrecision::from_str("fp8", false).is_err(), "fp8 is set by the model, not a flag");
        assert!(GpuSync::from_str("sleep", false).is_err());
    }
}
