//! Host memory for an engine's outputs in the engine's own types. edgert's tensors are f32: an f32
//! output is written in place; f16, INT32, INT64 and BOOL ones (an NMS plugin's
//! `num_detections` and `detection_classes`) land in a staging buffer of their type and are read
//! into f32 after the run. Counts, class ids and flags are exact in f32 up to 2^24.

use half::f16;

use crate::tensor::{DataType, HostTensor};

/// The output types an engine may have, and how each reaches f32.
pub enum Staging {
    F32,
    F16(Vec<f16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    /// TensorRT's BOOL: one byte, 0 or 1.
    Bool(Vec<u8>),
}

/// Values whose every bit pattern is valid: a tensor's memory as bytes, both ways.
pub trait Plain: Copy {}
impl Plain for f32 {}
impl Plain for f16 {}
impl Plain for i32 {}
impl Plain for i64 {}
impl Plain for u8 {}

pub fn bytes<T: Plain>(values: &[T]) -> &[u8] {
    // SAFETY: `Plain` values are plain bytes.
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast(), std::mem::size_of_val(values)) }
}

pub fn bytes_mut<T: Plain>(values: &mut [T]) -> &mut [u8] {
    // SAFETY: as above, and any bytes are some `Plain` value.
    unsafe { std::slice::from_raw_parts_mut(values.as_mut_ptr().cast(), std::mem::size_of_val(values)) }
}

impl Staging {
    /// How an output of `dtype` is read; None for a type edgert does not read.
    pub fn for_type(dtype: DataType) -> Option<Staging> {
        Some(match dtype {
            DataType::F32 => Staging::F32,
            DataType::F16 => Staging::F16(Vec::new()),
            DataType::I32 => Staging::I32(Vec::new()),
            DataType::I64 => Staging::I64(Vec::new()),
            DataType::Bool => Staging::Bool(Vec::new()),
            _ => return None,
        })
    }

    /// Bytes a value takes in the staging buffer (0: written in place).
    pub fn staged_bytes(dtype: DataType) -> u128 {
        match dtype {
            DataType::F16 => 2,
            DataType::I32 => 4,
            DataType::I64 => 8,
            DataType::Bool => 1,
            _ => 0,
        }
    }

    /// The memory TensorRT writes `output` into, sized for it.
    pub fn memory<'a>(&'a mut self, output: &'a mut HostTensor) -> &'a mut [u8] {
        let len = output.data.len();
        match self {
            Staging::F32 => bytes_mut(&mut output.data),
            Staging::F16(v) => sized(v, len),
            Staging::I32(v) => sized(v, len),
            Staging::I64(v) => sized(v, len),
            Staging::Bool(v) => sized(v, len),
        }
    }

    /// Reads what the run wrote into `output`'s f32 values.
    pub fn finish(&self, output: &mut HostTensor) {
        let into = &mut output.data;
        match self {
            Staging::F32 => {}
            Staging::F16(v) => into.iter_mut().zip(v).for_each(|(o, v)| *o = v.to_f32()),
            Staging::I32(v) => into.iter_mut().zip(v).for_each(|(o, &v)| *o = v as f32),
            Staging::I64(v) => into.iter_mut().zip(v).for_each(|(o, &v)| *o = v as f32),
            Staging::Bool(v) => into.iter_mut().zip(v).for_each(|(o, &v)| *o = f32::from(v != 0)),
        }
    }
}

fn sized<T: Plain + Default>(values: &mut Vec<T>, len: usize) -> &mut [u8] {
    values.resize(len, T::default());
    bytes_mut(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_type_is_read_from_its_own_bytes_into_f32() {
        let cases: [(DataType, Vec<u8>, Vec<f32>); 4] = [
            (
                DataType::I32,
                [7i32, -1, 1 << 24].iter().flat_map(|v| v.to_ne_bytes()).collect(),
                vec![7.0, -1.0, 16_777_216.0],
            ),
            (
                DataType::I64,
                [80i64, 0, -3].iter().flat_map(|v| v.to_ne_bytes()).collect(),
                vec![80.0, 0.0, -3.0],
            ),
            (DataType::Bool, vec![1, 0, 1], vec![1.0, 0.0, 1.0]),
            (
                DataType::F16,
                [0.5f32, -2.0, 1024.0].iter().flat_map(|&v| f16::from_f32(v).to_ne_bytes()).collect(),
                vec![0.5, -2.0, 1024.0],
            ),
        ];
        for (dtype, written, want) in cases {
            let mut staging = Staging::for_type(dtype).unwrap();
            let mut output = HostTensor::zeros(&[3]);
            let memory = staging.memory(&mut output);
            assert_eq!(memory.len() as u128, 3 * Staging::staged_bytes(dtype), "{dtype:?}");
            memory.copy_from_slice(&written);
            staging.finish(&mut output);
            assert_eq!(output.data, want, "{dtype:?}");
        }
        assert!(Staging::for_type(DataType::I8).is_none() && Staging::for_type(DataType::Fp8).is_none());
    }
}
