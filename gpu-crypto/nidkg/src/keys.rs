//! Receiver keys of the forward-secure encryption: the public key `y = g1^x` with a
//! Schnorr proof of possession, and the secret key as a list of binary-tree nodes that
//! decrypts the current epoch and every later one, never an earlier one once updated.
//!
//! A node for an epoch prefix `p` of length `l` holds, for a fresh `rho`:
//! `a = g1^rho`, `b = g2^x * (f_0 * prod_{i < l, p_i = 1} f_{i+1})^rho`,
//! `d_tree = (f_{l+1} .. f_{LAMBDA_T})^rho`, `d_hash = (fh_0 .. fh_255)^rho`, `e = h^rho`.
//! Every operation on these is constant-time (they are secret).

use crate::error::DecryptError;
use crate::oracle::{
    DOMAIN_POP_ENCRYPTION_KEY, HashedMap, hash_bytes, hash_g1, random_oracle_to_g1,
    random_oracle_to_scalar,
};
use crate::params::{LAMBDA_H, LAMBDA_T, SysParams, epoch_bit, hash_bit};
use crate::random::random_scalar;
use ic_bls12_381::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use rand::{CryptoRng, RngCore};

/// A receiver's public key with its proof of possession (the IC's `FsEncryptionPop`):
/// `pop_key = x * B` for the oracle's base point `B`, and a Schnorr proof of equal
/// discrete logarithms of `key` (base `g1`) and `pop_key` (base `B`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReceiverPublicKey {
    /// `y = g1^x`.
    pub key: G1Affine,
    /// `B^x`.
    pub pop_key: G1Affine,
    /// The challenge `c`.
    pub pop_challenge: Scalar,
    /// The response `z = k + c x`.
    pub pop_response: Scalar,
}

impl ReceiverPublicKey {
    /// Checks the proof of possession for `associated_data` (the key's registration
    /// context), as the IC's `verify_pop` does: the blinders are recomputed from the
    /// response and the challenge must come out the same.
    pub fn verify_pop(&self, associated_data: &[u8]) -> bool {
        let base = pop_base(&self.key, associated_data);
        let minus_c = -self.pop_challenge;
        let blinder_key = G1Projective::generator() * self.pop_response + self.key * minus_c;
        let blinder_pop_key = base * self.pop_response + self.pop_key * minus_c;
        let c = pop_challenge_of(
            &self.key,
            &base,
            &self.pop_key,
            &G1Affine::from(blinder_key),
            &G1Affine::from(blinder_pop_key),
        );
        c == self.pop_challenge
    }
}

/// The proof's base point: the oracle on the instance (generator, key, associated data).
fn pop_base(key: &G1Affine, associated_data: &[u8]) -> G1Affine {
    let instance = HashedMap::new()
        .with("g1-generator", hash_g1(&G1Affine::generator()))
        .with("public-key", hash_g1(key))
        .with("associated-data", hash_bytes(associated_data));
    random_oracle_to_g1(DOMAIN_POP_ENCRYPTION_KEY, &instance.unique_hash())
}

fn pop_challenge_of(
    key: &G1Affine,
    base: &G1Affine,
    pop_key: &G1Affine,
    blinder_key: &G1Affine,
    blinder_pop_key: &G1Affine,
) -> Scalar {
    let map = HashedMap::new()
        .with("public-key", hash_g1(key))
        .with("pop-base", hash_g1(base))
        .with("pop-key", hash_g1(pop_key))
        .with("blinder-public-key", hash_g1(blinder_key))
        .with("blinder-pop-key", hash_g1(blinder_pop_key));
    random_oracle_to_scalar(DOMAIN_POP_ENCRYPTION_KEY, &map.unique_hash())
}

/// One node of the binary tree (see the module documentation).
struct TreeNode {
    /// The node's epoch prefix, left-aligned in 32 bits.
    prefix: u32,
    /// Prefix length in bits, `0..=LAMBDA_T`.
    len: usize,
    a: G1Affine,
    b: G2Affine,
    d_tree: Vec<G2Affine>,
    d_hash: Vec<G2Affine>,
    e: G2Affine,
}

impl TreeNode {
    /// True when the node's subtree contains `epoch`.
    fn covers(&self, epoch: u32) -> bool {
        self.len == 0 || (epoch >> (LAMBDA_T - self.len)) == (self.prefix >> (LAMBDA_T - self.len))
    }

    /// The node for the descendant prefix `(prefix, len)` (`len >= self.len`, inside this
    /// subtree), re-randomised with a fresh `delta` so that it is independent of `self`.
    fn delegate<R: RngCore + CryptoRng>(&self, prefix: u32, len: usize, rng: &mut R) -> TreeNode {
        let sys = SysParams::get();
        let delta = random_scalar(rng);
        let mut b = G2Projective::from(self.b);
        let mut f_prefix = G2Projective::from(sys.f0);
        for i in 0..len {
            if epoch_bit(prefix, i) {
                f_prefix += sys.f_tree[i];
                if i >= self.len {
                    b += self.d_tree[i - self.len];
                }
            }
        }
        b += f_prefix * delta;
        let d_tree = (len..LAMBDA_T)
            .map(|i| G2Affine::from(sys.f_tree[i] * delta + self.d_tree[i - self.len]))
            .collect();
        let d_hash = (0..LAMBDA_H)
            .map(|k| G2Affine::from(sys.f_hash[k] * delta + self.d_hash[k]))
            .collect();
        TreeNode {
            prefix,
            len,
            a: G1Affine::from(G1Projective::generator() * delta + self.a),
            b: G2Affine::from(b),
            d_tree,
            d_hash,
            e: G2Affine::from(sys.h * delta + self.e),
        }
    }
}

impl Drop for TreeNode {
    fn drop(&mut self) {
        // Erase the key material (forward security relies on old nodes being gone).
        fn wipe<T: Copy>(slot: &mut T, value: T) {
            // SAFETY: `slot` is a valid, aligned, exclusive reference.
            unsafe { std::ptr::write_volatile(slot, value) };
        }
        wipe(&mut self.a, G1Affine::identity());
        wipe(&mut self.b, G2Affine::identity());
        wipe(&mut self.e, G2Affine::identity());
        for d in self.d_tree.iter_mut().chain(self.d_hash.iter_mut()) {
            wipe(d, G2Affine::identity());
        }
    }
}

/// A receiver's forward-secure decryption key: tree nodes covering the epochs from
/// `current_epoch` on.
pub struct ReceiverSecretKey {
    nodes: Vec<TreeNode>,
    current_epoch: u32,
}

/// Generates a receiver key pair; `associated_data` is bound into the proof of possession.
pub fn generate_receiver_key<R: RngCore + CryptoRng>(
    rng: &mut R,
    associated_data: &[u8],
) -> (ReceiverPublicKey, ReceiverSecretKey) {
    let sys = SysParams::get();
    let x = random_scalar(rng);
    let rho = random_scalar(rng);
    let key = G1Affine::from(G1Projective::generator() * x);
    let base = pop_base(&key, associated_data);
    let pop_key = G1Affine::from(base * x);
    let k = random_scalar(rng);
    let blinder_key = G1Affine::from(G1Projective::generator() * k);
    let blinder_pop_key = G1Affine::from(base * k);
    let pop_challenge = pop_challenge_of(&key, &base, &pop_key, &blinder_key, &blinder_pop_key);
    let pop_response = k + pop_challenge * x;
    let root = TreeNode {
        prefix: 0,
        len: 0,
        a: G1Affine::from(G1Projective::generator() * rho),
        b: G2Affine::from(G2Projective::generator() * x + sys.f0 * rho),
        d_tree: sys.f_tree.iter().map(|f| G2Affine::from(f * rho)).collect(),
        d_hash: sys.f_hash.iter().map(|f| G2Affine::from(f * rho)).collect(),
        e: G2Affine::from(sys.h * rho),
    };
    (
        ReceiverPublicKey {
            key,
            pop_key,
            pop_challenge,
            pop_response,
        },
        ReceiverSecretKey {
            nodes: vec![root],
            current_epoch: 0,
        },
    )
}

impl ReceiverSecretKey {
    /// The earliest epoch this key still decrypts.
    pub fn current_epoch(&self) -> u32 {
        self.current_epoch
    }

    /// Number of tree nodes held.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Moves the key forward to `epoch`: afterwards it decrypts `epoch` and later epochs
    /// only, and the nodes for earlier epochs are erased. A no-op for `epoch <=
    /// current_epoch()`. Costs one re-randomisation (about 290 G2 multiplications) per
    /// new node, at most 33 nodes.
    pub fn update_to<R: RngCore + CryptoRng>(&mut self, epoch: u32, rng: &mut R) {
        if epoch <= self.current_epoch {
            return;
        }
        // Cover [epoch, 2^32): the right sibling of every 0 bit on epoch's path, then the
        // leaf itself (kept last: it is the current key).
        let mut wanted: Vec<(u32, usize)> = (0..LAMBDA_T)
            .filter(|&i| !epoch_bit(epoch, i))
            .map(|i| {
                let len = i + 1;
                let high = if i == 0 {
                    0
                } else {
                    epoch & (u32::MAX << (LAMBDA_T - i))
                };
                (high | (1 << (LAMBDA_T - 1 - i)), len)
            })
            .collect();
        wanted.push((epoch, LAMBDA_T));
        let mut old = std::mem::take(&mut self.nodes);
        for (prefix, len) in wanted {
            let at = old
                .iter()
                .position(|n| n.len <= len && n.covers(prefix))
                .expect("every epoch after current_epoch is covered by a node");
            if old[at].len == len {
                // Already this subtree's node: keep it as it is.
                self.nodes.push(old.swap_remove(at));
            } else {
                let child = old[at].delegate(prefix, len, rng);
                self.nodes.push(child);
            }
        }
        // Dropping the remaining old nodes wipes them.
        drop(old);
        self.current_epoch = epoch;
    }

    /// The `b` component extended by the epoch's remaining tree bits and the identity's
    /// hash bits, with the node's `a` and `e`: what decryption pairs against.
    pub(crate) fn decryption_terms(
        &self,
        epoch: u32,
        hash_bits: &[u8; 32],
    ) -> Result<(G1Affine, G2Projective, G2Affine), DecryptError> {
        if epoch < self.current_epoch {
            return Err(DecryptError::ExpiredKey { epoch });
        }
        let node = self
            .nodes
            .iter()
            .find(|n| n.covers(epoch))
            .ok_or(DecryptError::ExpiredKey { epoch })?;
        let mut b = G2Projective::from(node.b);
        for i in node.len..LAMBDA_T {
            if epoch_bit(epoch, i) {
                b += node.d_tree[i - node.len];
            }
        }
        for (k, d) in node.d_hash.iter().enumerate() {
            if hash_bit(hash_bits, k) {
                b += d;
            }
        }
        Ok((node.a, b, node.e))
    }
}
