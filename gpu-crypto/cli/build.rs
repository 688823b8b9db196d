//! Marks the IC's published NI-DKG test data absent where it is (`../ic_testdata_build.rs`).

include!("../ic_testdata_build.rs");

fn main() {
    mark_ic_testdata();
}
