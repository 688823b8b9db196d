use group::{Curve, Group};
use ic_bls12_381::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
fn h(b: &[u8]) -> String { hex::encode(b) }
fn main() {
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    let mut out = String::new();
    // Single pairings, including the identity on either side.
    for i in 0..6 {
        let p = if i == 4 { G1Affine::identity() } else { G1Projective::random(&mut rng).to_affine() };
        let q = if i == 5 { G2Affine::identity() } else { G2Projective::random(&mut rng).to_affine() };
        let gt = pairing(&p, &q);
        out += &format!("prod 1 {} {} {}\n", h(&p.to_uncompressed()), h(&q.to_uncompressed()), h(&gt.to_bytes()));
    }
    // Products of 3 pairings.
    for _ in 0..2 {
        let ps: Vec<G1Affine> = (0..3).map(|_| G1Projective::random(&mut rng).to_affine()).collect();
        let qs: Vec<G2Affine> = (0..3).map(|_| G2Projective::random(&mut rng).to_affine()).collect();
        let prep: Vec<G2Prepared> = qs.iter().map(|q| G2Prepared::from(*q)).collect();
        let terms: Vec<(&G1Affine, &G2Prepared)> = ps.iter().zip(prep.iter()).collect();
        let gt = multi_miller_loop(&terms).final_exponentiation();
        out += "prod 3";
        for (p, q) in ps.iter().zip(&qs) { out += &format!(" {} {}", h(&p.to_uncompressed()), h(&q.to_uncompressed())); }
        out += &format!(" {}\n", h(&gt.to_bytes()));
    }
    // A batch: sk_i, pk_i = sk_i g2, H_i random, sig_i = sk_i H_i; some corrupted.
    let n = 5;
    let neg_g2 = (-G2Affine::generator()).to_uncompressed();
    out += &format!("batch {} {}\n", n, h(&neg_g2));
    for i in 0..n {
        let sk = Scalar::random(&mut rng);
        let pk = (G2Affine::generator() * sk).to_affine();
        let hm = G1Projective::random(&mut rng).to_affine();
        let mut sig = (hm * sk).to_affine();
        let ok = i != 2;
        if !ok { sig = (G1Projective::from(sig) + G1Projective::generator()).to_affine(); }
        let r: u128 = rng.gen();
        out += &format!("{} {} {} {} {}\n", h(&sig.to_uncompressed()), h(&hm.to_uncompressed()), h(&pk.to_uncompressed()), h(&r.to_le_bytes()), ok as u8);
    }
    // A batch with identity points, judged by the replica's formula.
    let n = 9;
    out += &format!("batch {} {}\n", n, h(&neg_g2));
    let neg_g2p = G2Prepared::from(-G2Affine::generator());
    for i in 0..n {
        let sk = Scalar::random(&mut rng);
        let mut pk = (G2Affine::generator() * sk).to_affine();
        let hm = G1Projective::random(&mut rng).to_affine();
        let mut sig = (hm * sk).to_affine();
        match i {
            1 => { sig = G1Affine::identity(); pk = G2Affine::identity(); }
            3 => { sig = G1Affine::identity(); }
            5 => { pk = G2Affine::identity(); }
            7 => { sig = (G1Projective::from(sig) + G1Projective::from(sig)).to_affine(); }
            _ => {}
        }
        let pkp = G2Prepared::from(pk);
        let ok = multi_miller_loop(&[(&sig, &neg_g2p), (&hm, &pkp)]).final_exponentiation() == Gt::identity();
        let r: u128 = rng.gen();
        out += &format!("{} {} {} {} {}\n", h(&sig.to_uncompressed()), h(&hm.to_uncompressed()), h(&pk.to_uncompressed()), h(&r.to_le_bytes()), ok as u8);
    }
    print!("{out}");
}
use ff::Field;
