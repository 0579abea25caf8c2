//! Prints every layout and constant fact of the `ndkpi` mirror, one per
//! line (`NDK_QP size 48`, `NDK_QP_DISPATCH.NdkRead offset 64`,
//! `const NDK_OP_FLAG_DEFER 512`), for comparison with the C headers.

fn main() {
    for fact in ndkpi::facts() {
        println!("{fact}");
    }
}
