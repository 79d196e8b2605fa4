//! TensorRT's version number: `getInferLibVersion()` is MAJ*1000+MIN*100+PATCH up to TensorRT 9
//! and MAJ*10000+MIN*100+PATCH from 10 (8.5.2 is 8502, 10.3.0 is 100300); from 10 on,
//! `getInferLibBuildVersion()` adds the build number, which engines are tied to as well.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrtVersion {
    pub major: i32,
    pub minor: i32,
    pub patch: i32,
    pub build: Option<i32>,
}

impl TrtVersion {
    pub fn decode(encoded: i32) -> TrtVersion {
        let major_unit = if encoded >= 100_000 { 10_000 } else { 1_000 };
        let major = encoded / major_unit;
        let rest = encoded % major_unit;
        TrtVersion { major, minor: rest / 100, patch: rest % 100, build: None }
    }

    /// What an engine is keyed by: `10.3.0.26` where the build number is known, else `8.6.2`.
    pub fn key(&self) -> String {
        match self.build {
            Some(build) => format!("{self}.{build}"),
            None => self.to_string(),
        }
    }

    /// The floor for `enqueueV3` and `setInputShape`, which the shim calls.
    pub fn is_supported(&self) -> bool {
        (self.major, self.minor) >= (8, 5)
    }

    /// FP8 kernels came with TensorRT 10 (8.6 declares the flag as not supported).
    pub fn has_fp8(&self) -> bool {
        self.major >= 10
    }

    /// TensorRT 11 builds strongly typed networks only: no FP16, INT8 or FP8 builder flags.
    pub fn has_precision_flags(&self) -> bool {
        self.major < 11
    }

    /// TensorRT 10.1 deprecated the INT8 calibrator and 11 removed it.
    pub fn has_int8_calibrator(&self) -> bool {
        self.major < 11
    }
}

impl std::fmt::Display for TrtVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

#[cfg(test)]
mod tests {
    use super::TrtVersion;

    #[test]
    fn both_encodings_decode_to_the_release() {
        assert_eq!(TrtVersion::decode(8502).to_string(), "8.5.2");
        assert_eq!(TrtVersion::decode(8602).to_string(), "8.6.2");
        assert_eq!(TrtVersion::decode(100300).to_string(), "10.3.0");
        assert_eq!(TrtVersion::decode(101300).to_string(), "10.13.0");
        assert!(!TrtVersion::decode(8401).is_supported());
        assert!(TrtVersion::decode(8502).is_supported());
        assert!(TrtVersion::decode(100300).has_int8_calibrator());
        assert!(!TrtVersion::decode(110100).has_int8_calibrator());
        assert_eq!(TrtVersion { build: Some(26), ..TrtVersion::decode(100300) }.key(), "10.3.0.26");
        assert_eq!(TrtVersion::decode(8602).key(), "8.6.2");
    }
}
