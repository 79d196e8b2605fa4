//! Host tensors exchanged with backends, independent of any backend's own types.

use serde::Serialize;

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
    pub dtype: String,
}

impl TensorSpec {
    /// The shape as text, `?` for dynamic dimensions: `[?, 3, 224, 224]`.
    pub fn shape_text(&self) -> String {
        let dims: Vec<String> =
            self.shape.iter().map(|d| d.map_or("?".to_string(), |d| d.to_string())).collect();
        format!("[{}]", dims.join(", "))
    }
}

/// f32 values for a u8 input: rounded to the nearest, clamped to 0..=255 (NaN becomes 0).
pub fn to_u8(values: &[f32]) -> Vec<u8> {
    // `as` saturates and maps NaN to 0.
    values.iter().map(|&v| v.round() as u8).collect()
}

/// f32 values for an f16 input, rounded to the nearest f16.
pub fn to_f16(values: &[f32]) -> Vec<half::f16> {
    values.iter().map(|&v| half::f16::from_f32(v)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn u8_inputs_round_and_clamp() {
        assert_eq!(
            to_u8(&[0.0, 0.49, 0.5, 1.5, 254.6, 255.4, 300.0, -3.0, f32::NAN]),
            [0, 0, 1, 2, 255, 255, 255, 0, 0]
        );
    }

    #[test]
    fn f16_inputs_round_to_nearest() {
        let halves = to_f16(&[0.5, 1.0 / 3.0, 70000.0]);
        assert_eq!(halves[0].to_f32(), 0.5);
        assert!((halves[1].to_f32() - 1.0 / 3.0).abs() < 1e-3);
        assert!(halves[2].to_f32().is_infinite());
    }
}
