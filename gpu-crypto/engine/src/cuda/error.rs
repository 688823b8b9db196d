//! The one error type of the CUDA backend.

/// A GPU failure. `kind()` is a short, bounded label for metrics.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GpuError {
    #[error("no usable CUDA device: {0}")]
    NoDevice(String),
    #[error("NVRTC (CUDA run-time compiler) unusable: {0}")]
    NoNvrtc(String),
    #[error("CUDA driver error: {0}")]
    Driver(String),
    #[error("kernel compilation failed: {0}")]
    Compile(String),
    #[error("no precompiled kernel: {0}")]
    KernelNotPrecompiled(String),
    #[error("GPU output failed validation: {0}")]
    BadOutput(String),
    #[error("input outside what the GPU path handles: {0}")]
    InputTooLarge(String),
    #[error("operation not implemented on the GPU")]
    Unsupported,
}

impl GpuError {
    pub fn kind(&self) -> &'static str {
        match self {
            GpuError::NoDevice(_) => "no_device",
            GpuError::NoNvrtc(_) => "no_nvrtc",
            GpuError::Driver(_) => "driver",
            GpuError::Compile(_) => "compile",
            GpuError::KernelNotPrecompiled(_) => "kernel_not_precompiled",
            GpuError::BadOutput(_) => "bad_output",
            GpuError::InputTooLarge(_) => "input_too_large",
            GpuError::Unsupported => "unsupported",
        }
    }
}
