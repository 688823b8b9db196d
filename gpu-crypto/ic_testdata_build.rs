// Included by the build scripts of the gpu-crypto crates whose tests read the IC's
// published NI-DKG test data: marks it absent (`ic_testdata_absent`) when the folder beside
// the project (or `IC_NIDKG_TESTDATA`) is missing, so that those tests are ignored with
// that reason instead of passing without running.

fn mark_ic_testdata() {
    println!("cargo::rustc-check-cfg=cfg(ic_testdata_absent)");
    println!("cargo::rerun-if-env-changed=IC_NIDKG_TESTDATA");
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let beside_project = std::path::Path::new(&manifest).join("../../../shared/testdata/ic-nidkg");
    println!("cargo::rerun-if-changed={}", beside_project.display());
    let from_env = std::env::var_os("IC_NIDKG_TESTDATA").map(std::path::PathBuf::from);
    let present = from_env
        .unwrap_or(beside_project)
        .join("nidkg_dealing.hex")
        .is_file();
    if !present {
        println!("cargo::rustc-cfg=ic_testdata_absent");
    }
}
