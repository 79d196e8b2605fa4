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
