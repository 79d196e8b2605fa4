//! What a built engine is tied to beyond the compute capability, which an AGX Orin and an Orin Nano
//! share: the device's name and memory (tactics are timed within it), and, for TensorRT 8.x, the
//! cuDNN and cuBLASLt releases its tactics came from. Read through the library symbols; each part
//! is left out where its library is missing.

use std::ffi::{c_char, c_int, CStr};

use super::ffi::Symbols;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeviceIdentity {
    /// `Orin`, `NVIDIA GeForce RTX 4090` (cuDeviceGetName).
    pub name: Option<String>,
    pub total_mib: Option<u64>,
    /// Free when the runtime opened: what an engine build may take on an integrated GPU.
    pub free_mib: Option<u64>,
    /// `cuDNN 8.6.0, cuBLASLt 11.11.3`, where TensorRT 8.x takes tactics from them.
    pub tactic_libraries: Option<String>,
}

impl DeviceIdentity {
    /// The device as the engine cache keys it: `Orin, 30697 MiB`.
    pub fn key(&self) -> Option<String> {
        match (&self.name, self.total_mib) {
            (None, None) => None,
            (name, total) => Some(format!(
                "{}, {}",
                name.as_deref().unwrap_or("unnamed GPU"),
                total.map_or("memory unknown".into(), |m| format!("{m} MiB"))
            )),
        }
    }
}

/// Reads the device the CUDA runtime is on, for a TensorRT of `major`.
pub fn probe(symbols: &Symbols, major: i32) -> DeviceIdentity {
    let mut identity = DeviceIdentity { name: name(symbols), ..DeviceIdentity::default() };
    if let Some(mem_get_info) = symbols.cuda_mem_get_info {
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: cudaMemGetInfo writes two sizes.
        if unsafe { mem_get_info(&mut free, &mut total) } == 0 {
            identity.free_mib = Some((free >> 20) as u64);
            identity.total_mib = Some((total >> 20) as u64);
        }
    }
    if major < 10 {
        // SAFETY: cudnnGetVersion and cublasLtGetVersion take nothing and return a number.
        let cudnn = symbols.cudnn_get_version.map(|f| cudnn_text(unsafe { f() }));
        // SAFETY: as above.
        let cublaslt = symbols.cublaslt_get_version.map(|f| cublaslt_text(unsafe { f() }));
        let parts: Vec<String> = cudnn.into_iter().chain(cublaslt).collect();
        identity.tactic_libraries = (!parts.is_empty()).then(|| parts.join(", "));
    }
    identity
}

/// The current device's name from the driver API, which every CUDA version has had.
fn name(symbols: &Symbols) -> Option<String> {
    let (init, get, get_name, current) =
        (symbols.cu_init?, symbols.cu_device_get?, symbols.cu_device_get_name?, symbols.cuda_get_device?);
    let (mut ordinal, mut device): (c_int, c_int) = (0, 0);
    let mut text = [0 as c_char; 256];
    // SAFETY: each call writes only what it is given: an int, a device handle, 256 bytes of name.
    unsafe {
        if current(&mut ordinal) != 0 || init(0) != 0 || get(&mut device, ordinal) != 0 {
            return None;
        }
        if get_name(text.as_mut_ptr(), text.len() as c_int - 1, device) != 0 {
            return None;
        }
        let name = CStr::from_ptr(text.as_ptr()).to_string_lossy().trim().to_string();
        (!name.is_empty()).then_some(name)
    }
}

/// cudnnGetVersion: MAJ*1000+MIN*100+PATCH up to cuDNN 8, MAJ*10000+MIN*100+PATCH from 9.
fn cudnn_text(v: usize) -> String {
    let unit = if v >= 90_000 { 10_000 } else { 1_000 };
    format!("cuDNN {}.{}.{}", v / unit, (v % unit) / 100, v % 100)
}

/// cublasLtGetVersion: MAJ*10000+MIN*100+PATCH.
fn cublaslt_text(v: usize) -> String {
    format!("cuBLASLt {}.{}.{}", v / 10_000, (v % 10_000) / 100, v % 100)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_versions_decode_in_each_encoding() {
        assert_eq!(cudnn_text(8600), "cuDNN 8.6.0");
        assert_eq!(cudnn_text(90100), "cuDNN 9.1.0");
        assert_eq!(cublaslt_text(111103), "cuBLASLt 11.11.3");
    }

    #[test]
    fn without_any_library_nothing_is_claimed() {
        let identity = probe(&Symbols::default(), 8);
        assert_eq!(identity, DeviceIdentity::default());
        assert_eq!(identity.key(), None);
    }
}
