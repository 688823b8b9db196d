//! Shared by the client's test binaries.

use std::path::PathBuf;

/// The cdylib cargo built for the gpu-crypto dependency: in target/<profile>/deps next to
/// the test binary, or one level up.
pub(crate) fn built_cdylib() -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    let deps = exe.parent().expect("deps dir");
    let candidates = [
        deps.join("libgpu_crypto.so"),
        deps.parent().expect("profile dir").join("libgpu_crypto.so"),
    ];
    candidates
        .iter()
        .find(|p| p.is_file())
        .cloned()
        .unwrap_or_else(|| panic!("libgpu_crypto.so not built; looked at {candidates:?}"))
}
