//! Host tensors exchanged with backends, independent of any backend's own types.

use std::borrow::Cow;

use half::f16;
use half::slice::HalfFloatSliceExt;
use serde::{Deserialize, Serialize};

/// The element type the model's input takes. Camera frames are preprocessed straight into it;
/// images and tensors are made in f32, and the backend converts them once, as it hands the batch
/// to its runtime (`tensor::BatchView::to`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElementType {
    #[default]
    F32,
    F16,
    /// Pixels as they are: clamped to 0..=255 and rounded, ties to even (the manifest's `scale` is then usually 1).
    U8,
}

impl ElementType {
    pub fn name(self) -> &'static str {
        DataType::from(self).name()
    }

    /// Bytes a value takes.
    pub fn bytes(self) -> usize {
        match self {
            ElementType::F32 => 4,
            ElementType::F16 => 2,
            ElementType::U8 => 1,
        }
    }
}

/// The element type of a model's or engine's input or output, as it declares it; `ElementType`
/// is the part of it edgert feeds inputs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataType {
    F32,
    F16,
    Bf16,
    F64,
    Fp8,
    I8,
    U8,
    I16,
    U16,
    I32,
    I64,
    Bool,
    String,
    /// A type edgert has no name for.
    Other,
    /// Not declared (an ONNX value without a type).
    Unknown,
}

impl DataType {
    /// The short name reports and `inspect` print: `f32`, `i64`, ...
    pub fn name(self) -> &'static str {
        match self {
            DataType::F32 => "f32",
            DataType::F16 => "f16",
            DataType::Bf16 => "bf16",
            DataType::F64 => "f64",
            DataType::Fp8 => "fp8",
            DataType::I8 => "i8",
            DataType::U8 => "u8",
            DataType::I16 => "i16",
            DataType::U16 => "u16",
            DataType::I32 => "i32",
            DataType::I64 => "i64",
            DataType::Bool => "bool",
            DataType::String => "string",
            DataType::Other => "other",
            DataType::Unknown => "unknown",
        }
    }
}

impl From<ElementType> for DataType {
    fn from(element: ElementType) -> DataType {
        match element {
            ElementType::F32 => DataType::F32,
            ElementType::F16 => DataType::F16,
            ElementType::U8 => DataType::U8,
        }
    }
}

impl std::fmt::Display for DataType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for DataType {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// A dense f32 tensor in host memory, row-major.
#[derive(Debug, Clone, PartialEq)]
pub struct HostTensor {
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
}

impl HostTensor {
    pub fn new(shape: Vec<usize>, data: Vec<f32>) -> Self {
        debug_assert_eq!(shape.iter().product::<usize>(), data.len());
        HostTensor { shape, data }
    }

    pub fn zeros(shape: &[usize]) -> Self {
        HostTensor { shape: shape.to_vec(), data: vec![0.0; shape.iter().product()] }
    }

    /// Number of f32 values in one item of the batch (axis 0).
    pub fn item_len(&self) -> usize {
        self.shape.iter().skip(1).product()
    }

    /// The values of batch item `index`.
    pub fn item(&self, index: usize) -> &[f32] {
        let len = self.item_len();
        &self.data[index * len..(index + 1) * len]
    }
}

/// A model input or output as declared by the model: `None` marks a dynamic dimension.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TensorSpec {
    pub name: String,
    pub shape: Vec<Option<usize>>,
    pub dtype: DataType,
}

impl TensorSpec {
    /// The shape as text, `?` for dynamic dimensions: `[?, 3, 224, 224]`.
    pub fn shape_text(&self) -> String {
        let dims: Vec<String> =
            self.shape.iter().map(|d| d.map_or("?".to_string(), |d| d.to_string())).collect();
        format!("[{}]", dims.join(", "))
    }
}

/// `'name' [shape], …` of several tensors, for errors.
pub fn describe(specs: &[TensorSpec]) -> String {
    specs.iter().map(|o| format!("'{}' {}", o.name, o.shape_text())).collect::<Vec<_>>().join(", ")
}

/// An element type a model input may take (`input.dtype`): how a preprocessed f32 value becomes
/// one, and back.
pub trait InputElement: Copy + Default + Send + Sync + 'static {
    fn from_f32(value: f32) -> Self;
    fn to_f32(self) -> f32;
    /// `from_f32` over a slice, where the type has a faster way (f16: the CPU's conversion
    /// instructions, several values at once).
    fn from_f32_slice(from: &[f32], to: &mut [Self]) {
        for (to, &from) in to.iter_mut().zip(from) {
            *to = Self::from_f32(from);
        }
    }
    /// The values, where they are of this type already.
    fn borrowed(view: BatchView<'_>) -> Option<&[Self]>;
}

impl InputElement for f32 {
    #[inline(always)]
    fn from_f32(value: f32) -> f32 {
        value
    }
    fn to_f32(self) -> f32 {
        self
    }
    fn from_f32_slice(from: &[f32], to: &mut [f32]) {
        to.copy_from_slice(from);
    }
    fn borrowed(view: BatchView<'_>) -> Option<&[f32]> {
        match view {
            BatchView::F32(values) => Some(values),
            _ => None,
        }
    }
}

/// Rounded to the nearest f16.
impl InputElement for f16 {
    #[inline(always)]
    fn from_f32(value: f32) -> f16 {
        f16::from_f32(value)
    }
    fn to_f32(self) -> f32 {
        f16::to_f32(self)
    }
    fn from_f32_slice(from: &[f32], to: &mut [f16]) {
        to.convert_from_f32_slice(from);
    }
    fn borrowed(view: BatchView<'_>) -> Option<&[f16]> {
        match view {
            BatchView::F16(values) => Some(values),
            _ => None,
        }
    }
}

/// Clamped to 0..=255 (NaN as 0), then rounded to the nearest, ties to even.
impl InputElement for u8 {
    #[inline(always)]
    // Not `clamp`: it keeps NaN, and NaN must become 0 here.
    #[allow(clippy::manual_clamp)]
    fn from_f32(value: f32) -> u8 {
        // `max` takes 0 over NaN. Once clamped, adding and taking away 2^23 rounds to a whole
        // number: two instructions that vectorize, where `f32::round` is a library call on
        // x86_64's baseline.
        let whole = (value.max(0.0).min(255.0) + 8_388_608.0) - 8_388_608.0;
        // SAFETY: `whole` is a whole number in 0..=255, never NaN.
        unsafe { whole.to_int_unchecked() }
    }
    fn to_f32(self) -> f32 {
        self.into()
    }
    fn borrowed(view: BatchView<'_>) -> Option<&[u8]> {
        match view {
            BatchView::U8(values) => Some(values),
            _ => None,
        }
    }
}

/// A batch's values in one of the element types a model input takes, owned: the camera pipeline
/// preprocesses frames straight into the model's own type.
#[derive(Debug, Clone, PartialEq)]
pub enum BatchValues {
    F32(Vec<f32>),
    F16(Vec<f16>),
    U8(Vec<u8>),
}

impl BatchValues {
    pub fn zeros(dtype: ElementType, len: usize) -> BatchValues {
        match dtype {
            ElementType::F32 => BatchValues::F32(vec![0.0; len]),
            ElementType::F16 => BatchValues::F16(vec![f16::ZERO; len]),
            ElementType::U8 => BatchValues::U8(vec![0; len]),
        }
    }

    pub fn view(&self) -> BatchView<'_> {
        match self {
            BatchValues::F32(values) => BatchView::F32(values),
            BatchValues::F16(values) => BatchView::F16(values),
            BatchValues::U8(values) => BatchView::U8(values),
        }
    }
}

/// A batch's values, borrowed for one run, in the type they were made in.
#[derive(Debug, Clone, Copy)]
pub enum BatchView<'a> {
    F32(&'a [f32]),
    F16(&'a [f16]),
    U8(&'a [u8]),
}

impl<'a> BatchView<'a> {
    /// The values as `T`: borrowed when they are `T` already, else converted (f32 to u8 rounds and
    /// clamps, f32 to f16 rounds; f16 and u8 to f32 are exact).
    pub fn to<T: InputElement>(self) -> Cow<'a, [T]> {
        match T::borrowed(self) {
            Some(values) => Cow::Borrowed(values),
            None => {
                let mut converted = vec![T::default(); self.len()];
                self.convert_into(&mut converted);
                Cow::Owned(converted)
            }
        }
    }

    /// Writes the values, converted as `to` converts them, into `out`, which is as long.
    pub fn convert_into<T: InputElement>(self, out: &mut [T]) {
        fn each<S: InputElement, T: InputElement>(values: &[S], out: &mut [T]) {
            for (out, &v) in out.iter_mut().zip(values) {
                *out = T::from_f32(v.to_f32());
            }
        }
        match self {
            BatchView::F32(values) => T::from_f32_slice(values, out),
            BatchView::F16(values) => each(values, out),
            BatchView::U8(values) => each(values, out),
        }
    }

    pub(crate) fn len(self) -> usize {
        match self {
            BatchView::F32(values) => values.len(),
            BatchView::F16(values) => values.len(),
            BatchView::U8(values) => values.len(),
        }
    }
}

/// One input batch as a backend runs it: its shape and values.
#[derive(Debug, Clone, Copy)]
pub struct Batch<'a> {
    pub shape: &'a [usize],
    pub values: BatchView<'a>,
}

impl<'a> From<&'a HostTensor> for Batch<'a> {
    fn from(tensor: &'a HostTensor) -> Batch<'a> {
        Batch { shape: &tensor.shape, values: BatchView::F32(&tensor.data) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn u8_inputs_round_and_clamp() {
        let values = [0.0, 0.49, 0.5, 0.51, 1.5, 2.5, 254.6, 255.4, 300.0, -3.0, f32::NAN, f32::INFINITY];
        assert_eq!(*BatchView::F32(&values).to::<u8>(), [0, 0, 0, 1, 2, 2, 255, 255, 255, 0, 0, 255]);
    }

    #[test]
    fn a_batch_of_the_models_type_is_borrowed_and_others_are_converted() {
        let bytes = [0u8, 7, 255];
        let view = BatchView::U8(&bytes);
        assert!(matches!(view.to::<u8>(), Cow::Borrowed(b) if b.as_ptr() == bytes.as_ptr()));
        assert_eq!(*view.to::<f32>(), [0.0, 7.0, 255.0]);
        assert_eq!(*view.to::<f16>(), [0.0, 7.0, 255.0].map(f16::from_f32));
        let values = [0.75f32, 1.0 / 3.0, 300.0];
        let view = BatchView::F32(&values);
        assert!(matches!(view.to::<f32>(), Cow::Borrowed(_)));
        assert_eq!(*view.to::<u8>(), [1, 0, 255]);
        assert_eq!(*view.to::<f16>(), values.map(f16::from_f32));
        let halves = [3.5, -1.0].map(f16::from_f32);
        assert_eq!(*BatchView::F16(&halves).to::<u8>(), [4, 0]);
        assert_eq!(*BatchView::F16(&halves).to::<f32>(), [3.5, -1.0]);
    }

    #[test]
    fn f16_inputs_round_to_nearest() {
        let halves = BatchView::F32(&[0.5, 1.0 / 3.0, 70000.0]).to::<f16>();
        assert_eq!(halves[0].to_f32(), 0.5);
        assert!((halves[1].to_f32() - 1.0 / 3.0).abs() < 1e-3);
        assert!(halves[2].to_f32().is_infinite());
    }
}
