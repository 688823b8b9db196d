//! Where the tests of the gpu-crypto crates find the IC's published NI-DKG data (never
//! copied into the repository): `IC_NIDKG_TESTDATA`, else `shared/testdata/ic-nidkg` beside
//! an ancestor of the current directory (test binaries also run away from their build
//! tree). The tests that call it are ignored where build.rs found no data.

use std::path::PathBuf;

pub(crate) fn dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("IC_NIDKG_TESTDATA") {
        return dir.into();
    }
    let cwd = std::env::current_dir().expect("current directory");
    cwd.ancestors()
        .flat_map(|a| {
            [
                a.join("shared/testdata/ic-nidkg"),
                a.join("../shared/testdata/ic-nidkg"),
            ]
        })
        .find(|d| d.join("nidkg_dealing.hex").is_file())
        .expect("the IC's NI-DKG data folder (build.rs found it at build time)")
}
