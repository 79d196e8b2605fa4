//! What a model's weights are made of, in one word every backend, report and command uses:
//! `fp32`, `fp16`, `int8-qdq` (explicit quantization: Q/DQ nodes), `fp8`, or `engine` (a TensorRT
//! engine, whose precision TensorRT chose when it built it).

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(into = "&'static str")]
pub enum Precision {
    Fp32,
    Fp16,
    Int8Qdq,
    Fp8,
    Engine,
}

impl Precision {
    pub fn name(self) -> &'static str {
        match self {
            Precision::Fp32 => "fp32",
            Precision::Fp16 => "fp16",
            Precision::Int8Qdq => "int8-qdq",
            Precision::Fp8 => "fp8",
            Precision::Engine => "engine",
        }
    }
}

impl From<Precision> for &'static str {
    fn from(precision: Precision) -> &'static str {
        precision.name()
    }
}

impl std::fmt::Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A precision is its name: `precision == "int8-qdq"`.
impl PartialEq<&str> for Precision {
    fn eq(&self, name: &&str) -> bool {
        self.name() == *name
    }
}
