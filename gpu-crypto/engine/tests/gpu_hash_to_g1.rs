//! Hashing to G1 on the GPU (RFC 9380 hash_to_curve, BLS12381G1_XMD:SHA-256_SSWU_RO_)
//! against the RFC's test vectors and against ic_bls12_381 (the CPU path's
//! `hash_message_to_g1`): random messages of many lengths including the empty message and
//! long ones, both BLS schemes' tags, other tags (empty, 255 bytes, oversize ones the
//! RFC hashes first), and a batch of 4,096. The GPU tests are ignored unless asked for
//! (`--include-ignored`): they need a GPU. The vectors file is checked against
//! ic_bls12_381 everywhere.

mod gpu_common;

use gpu_common::gpu;
use gpu_crypto::{BlsScheme, G1Affine, G1Projective, cpu};
use ic_bls12_381::hash_to_curve::{ExpandMsgXmd, HashToCurve};
use rand::{Rng, RngCore};

/// RFC 9380 appendix J.9.1 (source notes in the file), embedded for the device run.
const RFC_VECTORS: &str =
    include_str!("../testdata/hash_to_g1/rfc9380_bls12381g1_xmd_sha256_sswu_ro.txt");

struct Vector {
    message: Vec<u8>,
    point: [u8; 96],
}

fn rfc_vectors() -> (Vec<u8>, Vec<Vector>) {
    let mut dst = Vec::new();
    let mut vectors = Vec::new();
    let mut message: Option<Vec<u8>> = None;
    for line in RFC_VECTORS.lines().filter(|l| !l.starts_with('#')) {
        if let Some(d) = line.strip_prefix("dst ") {
            dst = d.as_bytes().to_vec();
        } else if line == "msg" || line.starts_with("msg ") {
            message = Some(line.get(4..).unwrap_or("").as_bytes().to_vec());
        } else if let Some(p) = line.strip_prefix("P ") {
            let point: [u8; 96] = hex::decode(p)
                .expect("hex point")
                .try_into()
                .expect("96 bytes");
            vectors.push(Vector {
                message: message.take().expect("msg before P"),
                point,
            });
        }
    }
    assert!(!dst.is_empty(), "no dst line");
    (dst, vectors)
}

fn reference(dst: &[u8], message: &[u8]) -> G1Affine {
    G1Affine::from(
        <G1Projective as HashToCurve<ExpandMsgXmd<sha2::Sha256>>>::hash_to_curve(message, dst),
    )
}

#[test]
fn rfc_vectors_file_matches_ic_bls12_381() {
    let (dst, vectors) = rfc_vectors();
    assert_eq!(vectors.len(), 5);
    assert_eq!(vectors[0].message, b"");
    assert_eq!(vectors[4].message.len(), 517);
    for v in &vectors {
        assert_eq!(reference(&dst, &v.message).to_uncompressed(), v.point);
    }
}

#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn rfc_9380_vectors() {
    let gpu = gpu();
    let (dst, vectors) = rfc_vectors();
    let input: Vec<(&[u8], &[u8])> = vectors.iter().map(|v| (&dst[..], &v.message[..])).collect();
    let got = gpu.hash_to_g1(&input).expect("GPU hash");
    assert_eq!(got.len(), vectors.len());
    for (v, p) in vectors.iter().zip(&got) {
        assert_eq!(
            hex::encode(p.to_uncompressed()),
            hex::encode(v.point),
            "message of {} bytes",
            v.message.len()
        );
    }
}

#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn bls_schemes_random_empty_and_long_messages_equal_the_cpu_path() {
    let gpu = gpu();
    let mut rng = gpu_common::rng(71);
    let mut lengths: Vec<usize> = vec![0, 1, 31, 32, 33, 55, 56, 63, 64, 65, 119, 120, 128];
    lengths.extend([1000, 4096, 10_000, 65_537]);
    lengths.extend((0..200).map(|_| rng.gen_range(0..300)));
    let mut owned: Vec<(BlsScheme, Vec<u8>)> = Vec::new();
    for len in lengths {
        let mut m = vec![0u8; len];
        rng.fill_bytes(&mut m);
        let scheme = BlsScheme::ALL[rng.gen_range(0..BlsScheme::ALL.len())];
        owned.push((scheme, m));
    }
    // The same message under both tags, and a repeated message.
    owned.push((BlsScheme::ALL[0], b"same".to_vec()));
    owned.push((BlsScheme::ALL[1], b"same".to_vec()));
    owned.push((BlsScheme::ALL[0], b"same".to_vec()));
    let input: Vec<(&[u8], &[u8])> = owned.iter().map(|(s, m)| (s.dst(), &m[..])).collect();
    let got = gpu.hash_to_g1(&input).expect("GPU hash");
    assert_eq!(got.len(), owned.len());
    for (i, ((scheme, m), p)) in owned.iter().zip(&got).enumerate() {
        assert_eq!(
            *p,
            cpu::hash_message_to_g1(*scheme, m),
            "item {i}: {scheme:?}, {} bytes",
            m.len()
        );
        assert!(bool::from(p.is_torsion_free()), "item {i} outside G1");
    }
    let (a, b, c) = (got[got.len() - 3], got[got.len() - 2], got[got.len() - 1]);
    assert_ne!(a, b, "the tag separates the domains");
    assert_eq!(a, c);
}

#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn other_tags_equal_ic_bls12_381() {
    let gpu = gpu();
    let mut rng = gpu_common::rng(72);
    let tags: Vec<Vec<u8>> = vec![
        Vec::new(),
        b"x".to_vec(),
        vec![0xa5; 255],
        vec![0x5a; 256], // oversize: hashed first (RFC 9380 section 5.3.3)
        (0..1000).map(|_| rng.r#gen()).collect(),
    ];
    let mut owned: Vec<(usize, Vec<u8>)> = Vec::new();
    for (t, _) in tags.iter().enumerate() {
        for len in [0usize, 3, 100, 700] {
            let mut m = vec![0u8; len];
            rng.fill_bytes(&mut m);
            owned.push((t, m));
        }
    }
    let input: Vec<(&[u8], &[u8])> = owned.iter().map(|(t, m)| (&tags[*t][..], &m[..])).collect();
    let got = gpu.hash_to_g1(&input).expect("GPU hash");
    for ((t, m), p) in owned.iter().zip(&got) {
        assert_eq!(
            *p,
            reference(&tags[*t], m),
            "tag of {} bytes, message of {} bytes",
            tags[*t].len(),
            m.len()
        );
    }
}

#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn a_batch_of_4096_and_the_empty_batch() {
    let gpu = gpu();
    assert!(gpu.hash_to_g1(&[]).expect("empty batch").is_empty());
    let mut rng = gpu_common::rng(73);
    let owned: Vec<(BlsScheme, Vec<u8>)> = (0..4096)
        .map(|_| {
            let mut m = vec![0u8; rng.gen_range(0..200)];
            rng.fill_bytes(&mut m);
            (BlsScheme::ALL[rng.gen_range(0..BlsScheme::ALL.len())], m)
        })
        .collect();
    let input: Vec<(&[u8], &[u8])> = owned.iter().map(|(s, m)| (s.dst(), &m[..])).collect();
    let got = gpu.hash_to_g1(&input).expect("GPU hash");
    assert_eq!(got.len(), owned.len());
    for (i, ((scheme, m), p)) in owned.iter().zip(&got).enumerate() {
        assert_eq!(*p, cpu::hash_message_to_g1(*scheme, m), "item {i}");
    }
}
