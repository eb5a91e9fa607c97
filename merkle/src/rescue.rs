//! The Rp64_256 hash: Rescue-XLIX over the Goldilocks field with a 12-element state, as in
//! winter-crypto 0.13.1 (`winter_crypto::hashers::Rp64_256`).
//!
//! State `s[0..4]` is the capacity and `s[4..12]` the rate. A round is
//! `x^7, MDS, + ARK1[r], x^(1/7), MDS, + ARK2[r]`, seven rounds per permutation. The MDS
//! matrix is circulant with first row [`MDS_ROW`]. The round constants are facts of the
//! published instance; `tests/winter.rs` checks them against winter-crypto's tables.

use crate::digest::Digest;
use crate::field::{self, Felt};
use crate::hasher::{Hasher, sealed};

/// Rescue Prime Rp64_256, the hash of winter-crypto's `Rp64_256`: [`merge`] and
/// [`hash_elements`] as a [`Hasher`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Rp64_256;

impl Hasher for Rp64_256 {
    const NAME: &'static str = "Rp64_256";

    fn merge(left: &Digest, right: &Digest) -> Digest {
        merge(left, right)
    }

    fn hash_elements(elements: &[Felt]) -> Digest {
        hash_elements(elements)
    }
}

impl sealed::Sealed for Rp64_256 {
    #[cfg(feature = "cuda")]
    const DEVICE: crate::cuda::DeviceHasher = crate::cuda::RP64_256;
}

/// Elements in the permutation state.
pub const STATE_WIDTH: usize = 12;
/// Rounds per permutation.
pub const ROUNDS: usize = 7;
/// Elements absorbed per permutation (the rate).
pub const RATE: usize = 8;
/// First state element of the rate, and of the digest.
const RATE_START: usize = 4;

/// First row of the circulant MDS matrix: `MDS[i][j] = MDS_ROW[(j - i) mod 12]`.
pub const MDS_ROW: [u64; STATE_WIDTH] = [7, 23, 8, 26, 13, 10, 9, 7, 6, 22, 21, 8];

/// Round constants added after the first half of each round (canonical values).
pub const ARK1: [[u64; STATE_WIDTH]; ROUNDS] = [
    [
        0xc12511fe3f05bc93,
        0xde138177d4bc8d50,
        0x41a41133ed513bab,
        0x8b9b358bf1541407,
        0x8811ac5b71f566fc,
        0xd96b7b8d6eb551ed,
        0x8cde21b6e08fab9f,
        0xbd202d5ecae6b667,
        0x203fbf544d885590,
        0x08898687fec7d215,
        0x7b1ae5ead4f885b7,
        0x9230e13f804371c8,
    ],
    [
        0xca3aae98583875b2,
        0x83150d8142c884af,
        0x5b1e6a10ac7929b6,
        0xafcc3ccaa7f1687f,
        0x63d572fefbe31a88,
        0xa4cbce92b20eecba,
        0xf881f994b450b291,
        0x112b95fd4afa6d29,
        0x5ec89de8dd3749ef,
        0x1db2d98ba5c8bf25,
        0x168af46ab08a5719,
        0x00b506fcc319607e,
    ],
    [
        0xe20ade8256ca1c4d,
        0xb8810f1ea71e24d8,
        0xb98de6597b3be5a0,
        0x087c9a49334ec939,
        0xb28a72e84b1411cb,
        0xaa460370410f62ff,
        0x7239e665c1d9ad88,
        0xbae2f135b2d28670,
        0x8d3bed3d779b93c0,
        0xcf7e41c71dd1769d,
        0x51a28102cd3daa49,
        0xfb897286aeea1585,
    ],
    [
        0x5455c1d8cadcd8ee,
        0x679ec163ff57abfa,
        0x4c758208aee29b8b,
        0xcbe61b2da5d15d78,
        0xb4238d0882a9e9d2,
        0x12e3e889fb9ad102,
        0x549213cedf124231,
        0x46ed8115d4caf607,
        0x770bd0fe0d1b6fc3,
        0x8139fa71ca3132bd,
        0xeb70a63394d0d235,
        0x4fc30f4895870690,
    ],
    [
        0xbde8166196a5e3fb,
        0x004515cfa1305ab9,
        0xe6a1b98244d828cd,
        0x03dc750779ccf882,
        0x4559c961075d20a9,
        0x0adc681392eb1cb4,
        0xe3ecf19c59ac1bec,
        0x8aa71b96ee8b348a,
        0xe88d40a09de061a1,
        0x1d326a95f8091d30,
        0xde4dd832fda7951c,
        0x59ecf508d3302a87,
    ],
    [
        0xc1b3a7376a3106b9,
        0x86a7574489ce3257,
        0xfec250d2bb878c5b,
        0x2a0ac6f28e435edb,
        0x191c01651878cbcd,
        0xace886adf99d7a1f,
        0xa6539c51d67cd482,
        0xb2972f697cc878bc,
        0x6d3f9f15645dfbe1,
        0x946a0b1395613652,
        0x77f9313120e2e752,
        0x13bf3a438c89044c,
    ],
    [
        0xf4851a1e79c68508,
        0x55ad547627280b3d,
        0xd10384e6e3b7f0e8,
        0x3e808bc8f78ccbe7,
        0xa0210b8e3f0d224d,
        0xb152a80e4e69a723,
        0xf79e69711d17daf1,
        0xba8a7f232dfa643c,
        0x52952bc7e8c11c0d,
        0xec7bd7773de3d610,
        0x79f401667ece5515,
        0x67209c07b5e0be7a,
    ],
];

/// Round constants added at the end of each round (canonical values).
pub const ARK2: [[u64; STATE_WIDTH]; ROUNDS] = [
    [
        0x6edf8b19ad8f4219,
        0x77e5b3c5f75e2b50,
        0x5a0c009b62aeeb6f,
        0x4c9807de7add4629,
        0x293f47e2cf706afd,
        0xcec6fdb2025b035b,
        0xc482cc108e143a06,
        0x52d8c53c7de7fc5d,
        0x46ffdd098d718ec0,
        0xa832e5af91ebe0f3,
        0xf18919f8ef4993ec,
        0x25b8ddd3b26d63dc,
    ],
    [
        0x227dd59d41e99fb2,
        0xc74530a8275a53bd,
        0x2e2becac8cead640,
        0x534b13b8b181d3e4,
        0xf1bd493c6fa7b59f,
        0xa3e81bc699c88f97,
        0xcd6d16d216b19d26,
        0x0a6f82a7f22b0e28,
        0x8298a7a24ff71f41,
        0xe3ac374bcd19c3ea,
        0x5f4dd2f35796ab55,
        0xc20ab0db1a71babc,
    ],
    [
        0x90d768ff06f8103d,
        0xb7b51f7f855352fc,
        0x094667e81fda04d2,
        0x211b134ca7988c10,
        0x35c5adaf58fb6321,
        0xb3c04a20241b5426,
        0x1b6172fc911f457f,
        0xc24b1af4e26dd6c3,
        0x0d8cca8ec807ce1a,
        0x74abac228776a02e,
        0x04b39bc37587568e,
        0x3a6691c8d2be5047,
    ],
    [
        0x1fb3caa4759fffde,
        0x3e750136d80c33f4,
        0x372de50a046f6155,
        0x2420c2dc9806e0d4,
        0x4ff08d230920a71a,
        0x2868028bdeec6360,
        0xff928ee31564963a,
        0x62055f98cc1f063d,
        0xe6bbd37ed57d19ee,
        0x0244d118cde94668,
        0xa0ed6c2de4f7a87a,
        0x294fdd943c5d8393,
    ],
    [
        0xd16ab61f9f64ebbe,
        0x3087152f1ab28cb7,
        0x77ff5ffff6bcb880,
        0x2223fda219980c75,
        0x36be4d0b4d27fa42,
        0xcd23264df672da6b,
        0x27a8c3f8f817f0b7,
        0x76095b249d144d05,
        0xf9e9cd996748f880,
        0x09fe94d3a1fcf663,
        0x61ae5219db0c05c5,
        0x7ad09d451ea370a6,
    ],
    [
        0xf1dbf30608a06426,
        0x101787451ee57777,
        0xf90f5b2570aba526,
        0x57f7eb204c8b5e82,
        0xf5da3ceed7939f10,
        0x3a6929392f1f419e,
        0xabe5a7af3d2175e7,
        0x8aed911875e6973f,
        0x4d3ec3843bf34b4d,
        0xadc07ef4a390ac3d,
        0x45020984b563a74f,
        0x4daccf713ac1aed5,
    ],
    [
        0xfe80bb2b782f2dc0,
        0x019904a6df3223a7,
        0x3d719a98c771ab0a,
        0x9723a2c00a5d0c24,
        0x6274b39615f62b02,
        0x65f0b7f13623021b,
        0x5ed79cf0d1259560,
        0xc253fe01efc5109c,
        0xdd338605d58541e7,
        0xb07cf56cd446c6bf,
        0x3953470b3f44fcba,
        0x6af1c157ca0b3636,
    ],
];

/// The exponent of the inverse S-box, `1/7 mod (p - 1)`.
pub const INV_ALPHA: u64 = 10540996611094048183;

/// The permutation state on the CPU: plain forms, each any `u64` congruent to its element
/// (it may exceed `p`).
pub(crate) type State = [u64; STATE_WIDTH];

/// [`ARK1`] in Montgomery form, for the GPU kernels.
#[cfg(feature = "cuda")]
pub(crate) const ARK1_MONT: [State; ROUNDS] = to_mont_table(&ARK1);
/// [`ARK2`] in Montgomery form, for the GPU kernels.
#[cfg(feature = "cuda")]
pub(crate) const ARK2_MONT: [State; ROUNDS] = to_mont_table(&ARK2);

/// Every entry of `table` in Montgomery form.
#[cfg(feature = "cuda")]
pub(crate) const fn to_mont_table<const W: usize, const R: usize>(
    table: &[[u64; W]; R],
) -> [[u64; W]; R] {
    let mut out = [[0; W]; R];
    let mut r = 0;
    while r < R {
        let mut c = 0;
        while c < W {
            out[r][c] = field::to_mont_const(table[r][c]);
            c += 1;
        }
        r += 1;
    }
    out
}

/// Applies the Rp64_256 permutation to `state` (canonical in, canonical out).
pub fn permute(state: &mut [Felt; STATE_WIDTH]) {
    let mut held = state.map(Felt::as_u64);
    permute_state(&mut held);
    *state = held.map(|x| Felt::new(field::canonical(x)));
}

/// The permutation on a [`State`].
fn permute_state(state: &mut State) {
    for round in 0..ROUNDS {
        for x in state.iter_mut() {
            *x = pow7(*x);
        }
        mds_add(state, &ARK1[round]);
        pow_inv_alpha(state);
        mds_add(state, &ARK2[round]);
    }
}

/// `x^7`, by [`field::mul`]: plain forms with direct reductions. On the CPU that reduction takes
/// one 64 x 64-bit multiplication where a Montgomery product takes three, and the multiplier is
/// what a permutation's twelve independent chains of products wait on (the inverse S-box
/// 20% faster on an Intel Xeon; see the crate's journal).
#[inline(always)]
pub(crate) fn pow7(x: u64) -> u64 {
    let x2 = field::mul(x, x);
    let x3 = field::mul(x2, x);
    let x4 = field::mul(x2, x2);
    field::mul(x3, x4)
}

/// `x^INV_ALPHA` for every element, with 62 squarings and 9 multiplications. Writing `P(k)`
/// for the exponent with `k` bits set, every third bit (`1 + 8 + ... + 8^(k-1)`),
/// `INV_ALPHA = 16 P(10) (2^32 + 3) + 7`; `x^P(k)` doubles `k` by squaring and multiplying,
/// from `x^P(2) = x^9 = x^7 x^2`. Each step runs over the whole state, so the twelve
/// independent chains overlap in the pipeline instead of waiting on one another.
#[inline(always)]
pub(crate) fn pow_inv_alpha<const W: usize>(state: &mut [u64; W]) {
    let x = *state;
    let x2 = squared(x, 1);
    let x3 = times(x2, &x);
    let x4 = squared(x2, 1);
    let x7 = times(x3, &x4);
    let p2 = times(x7, &x2); // x^9 = x^P(2)
    let p4 = times(squared(p2, 6), &p2);
    let p8 = times(squared(p4, 12), &p4);
    let p10 = times(squared(p8, 6), &p2);
    let p10_sq = squared(p10, 1);
    let p10_cube = times(p10_sq, &p10);
    let w = times(squared(p10_sq, 31), &p10_cube); // x^(P(10) (2^32 + 3))
    *state = times(squared(w, 4), &x7);
}

/// `a` with every element squared `n` times.
#[inline(always)]
fn squared<const W: usize>(mut a: [u64; W], n: u32) -> [u64; W] {
    square_n(&mut a, n);
    a
}

/// `a` with every element multiplied by the matching one of `b`.
#[inline(always)]
fn times<const W: usize>(mut a: [u64; W], b: &[u64; W]) -> [u64; W] {
    mul_each(&mut a, b);
    a
}

/// `a[i] *= b[i]` for every element.
#[inline(always)]
fn mul_each<const W: usize>(a: &mut [u64; W], b: &[u64; W]) {
    for (x, &y) in a.iter_mut().zip(b) {
        *x = field::mul(*x, y);
    }
}

/// Squares every element `n` times.
#[inline(always)]
fn square_n<const W: usize>(a: &mut [u64; W], n: u32) {
    for _ in 0..n {
        for x in a.iter_mut() {
            *x = field::mul(*x, *x);
        }
    }
}

/// `state = MDS state + ark`, the MDS product reduced once per element together with the
/// constant. The product is linear with small integer coefficients, so it works on Montgomery
/// forms unchanged; each input is split into 32-bit halves, [`mds_integer`] multiplies each
/// half-vector exactly over the integers, and `lo + 2^32 hi + ark` is reduced.
#[inline(always)]
pub(crate) fn mds_add(state: &mut State, ark: &State) {
    let lo = mds_integer(state.map(|x| x & 0xffff_ffff));
    let hi = mds_integer(state.map(|x| x >> 32));
    for (i, out) in state.iter_mut().enumerate() {
        // lo, hi < 160 * 2^32 < 2^40: the sum is below 2^73.
        let sum = u128::from(lo[i]) + (u128::from(hi[i]) << 32) + u128::from(ark[i]);
        *out = field::reduce96(sum);
    }
}

/// The circulant MDS product `y[i] = sum_j MDS_ROW[(j - i) mod 12] x[j]` over the integers,
/// for `x[j] < 2^32`, in about 100 additions and shifts instead of 144 multiplications.
///
/// As polynomials in `t`, `y = x h mod (t^12 - 1)` with `h[k] = MDS_ROW[-k mod 12]`. The
/// Chinese remainder theorem splits the product over `t^12 - 1 = (t^6 - 1)(t^6 + 1)`: with
/// `u = x h mod (t^6 - 1)` and `v = x h mod (t^6 + 1)`, `y[j] = (u[j] + v[j]) / 2` and
/// `y[j + 6] = (u[j] - v[j]) / 2`. The halving is folded into the reduced kernels (every
/// entry is even), and the cyclic product of length 6 splits the same way over
/// `(t^3 - 1)(t^3 + 1)`. The kernels left are tiny: [16, 8, 16] (cyclic), [-8, 1, 1] and
/// [-1, -1, 4, -2, -1, -8] (negacyclic). Intermediate values are signed and below 2^42 in
/// magnitude; the result is the exact non-negative product.
#[inline(always)]
fn mds_integer(x: State) -> State {
    let x = x.map(|v| v as i64);
    let (s, d) = fold(x);
    let (s3, d3) = fold(s);
    let u = unfold(
        cyclic(s3, MDS_KERNEL_CYCLIC_3),
        negacyclic(d3, MDS_KERNEL_NEGACYCLIC_3),
    );
    let v = negacyclic(d, MDS_KERNEL_NEGACYCLIC_6);
    unfold(u, v).map(|v| v as u64)
}

/// `h mod (t^3 - 1)`, halved twice (from `h mod (t^12 - 1)` with `h` as in [`mds_integer`]).
const MDS_KERNEL_CYCLIC_3: [i64; 3] = [16, 8, 16];
/// `h mod (t^3 + 1)`, halved twice.
const MDS_KERNEL_NEGACYCLIC_3: [i64; 3] = [-8, 1, 1];
/// `h mod (t^6 + 1)`, halved.
const MDS_KERNEL_NEGACYCLIC_6: [i64; 6] = [-1, -1, 4, -2, -1, -8];

/// Splits `x` (length `2n`) into `x mod (t^n - 1)` and `x mod (t^n + 1)`.
#[inline(always)]
pub(crate) fn fold<const N2: usize, const N: usize>(x: [i64; N2]) -> ([i64; N], [i64; N]) {
    let mut sum = [0; N];
    let mut difference = [0; N];
    for j in 0..N {
        sum[j] = x[j] + x[j + N];
        difference[j] = x[j] - x[j + N];
    }
    (sum, difference)
}

/// Recombines halved residues: the inverse of [`fold`] up to the factor 2 that the kernels
/// already absorbed.
#[inline(always)]
pub(crate) fn unfold<const N: usize, const N2: usize>(u: [i64; N], v: [i64; N]) -> [i64; N2] {
    let mut y = [0; N2];
    for j in 0..N {
        y[j] = u[j] + v[j];
        y[j + N] = u[j] - v[j];
    }
    y
}

/// `x h mod (t^n - 1)`.
#[inline(always)]
pub(crate) fn cyclic<const N: usize>(x: [i64; N], h: [i64; N]) -> [i64; N] {
    let mut y = [0; N];
    for i in 0..N {
        for j in 0..N {
            y[(i + j) % N] += x[i] * h[j];
        }
    }
    y
}

/// `x h mod (t^n + 1)`: a term wrapping past `t^n` changes sign.
#[inline(always)]
pub(crate) fn negacyclic<const N: usize>(x: [i64; N], h: [i64; N]) -> [i64; N] {
    let mut y = [0; N];
    for i in 0..N {
        for j in 0..N {
            if i + j < N {
                y[i + j] += x[i] * h[j];
            } else {
                y[i + j - N] -= x[i] * h[j];
            }
        }
    }
    y
}

/// `merge(left, right)`: the permutation of `[8, 0, 0, 0, left, right]`, digest `s[4..8]`.
/// Equals `hash_elements` of the eight elements of `left` and `right`.
pub fn merge(left: &Digest, right: &Digest) -> Digest {
    let mut state: State = [0; STATE_WIDTH];
    state[0] = RATE as u64;
    for (slot, element) in state[RATE_START..]
        .iter_mut()
        .zip(left.elements().iter().chain(right.elements()))
    {
        *slot = element.as_u64();
    }
    permute_state(&mut state);
    digest_of(&state)
}

/// `hash_elements(elements)`: `s[0] = len`, absorb eight elements at a time into the rate by
/// field addition, permute after each full rate and after a final partial one.
pub fn hash_elements(elements: &[Felt]) -> Digest {
    let mut state: State = [0; STATE_WIDTH];
    state[0] = field::canonical(elements.len() as u64);
    let mut chunks = elements.chunks_exact(RATE);
    for chunk in &mut chunks {
        absorb(&mut state, chunk);
        permute_state(&mut state);
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        absorb(&mut state, tail);
        permute_state(&mut state);
    }
    digest_of(&state)
}

#[inline(always)]
fn absorb(state: &mut State, chunk: &[Felt]) {
    for (slot, element) in state[RATE_START..].iter_mut().zip(chunk) {
        *slot = field::add(*slot, element.as_u64());
    }
}

fn digest_of(state: &State) -> Digest {
    let mut elements = [Felt::ZERO; 4];
    for (out, &x) in elements.iter_mut().zip(&state[RATE_START..RATE_START + 4]) {
        *out = Felt::new(field::canonical(x));
    }
    Digest::new(elements)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::MODULUS;

    fn pow(mut base: u64, mut exponent: u64) -> u64 {
        let mut result = 1u64;
        while exponent > 0 {
            if exponent & 1 == 1 {
                result = ((u128::from(result) * u128::from(base)) % u128::from(MODULUS)) as u64;
            }
            base = ((u128::from(base) * u128::from(base)) % u128::from(MODULUS)) as u64;
            exponent >>= 1;
        }
        result
    }

    /// The permutation as written in the spec, on canonical values with `u128` remainders.
    fn reference_permute(state: &mut [u64; STATE_WIDTH]) {
        let p = u128::from(MODULUS);
        let mds = |s: &[u64; STATE_WIDTH]| -> [u64; STATE_WIDTH] {
            std::array::from_fn(|i| {
                let sum = (0..STATE_WIDTH).fold(0u128, |acc, j| {
                    acc + u128::from(MDS_ROW[(j + STATE_WIDTH - i) % STATE_WIDTH])
                        * u128::from(s[j])
                });
                (sum % p) as u64
            })
        };
        let add = |a: u64, b: u64| ((u128::from(a) + u128::from(b)) % p) as u64;
        for round in 0..ROUNDS {
            let s = mds(&state.map(|x| pow(x, 7)));
            let s: [u64; STATE_WIDTH] = std::array::from_fn(|i| add(s[i], ARK1[round][i]));
            let s = mds(&s.map(|x| pow(x, INV_ALPHA)));
            *state = std::array::from_fn(|i| add(s[i], ARK2[round][i]));
        }
    }

    #[test]
    fn permutation_matches_the_reference() {
        let mut seed = 1u64;
        for _ in 0..16 {
            let start: [u64; STATE_WIDTH] = std::array::from_fn(|_| {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                seed % MODULUS
            });
            let mut expected = start;
            reference_permute(&mut expected);
            let mut ours = start.map(Felt::new);
            permute(&mut ours);
            assert_eq!(ours.map(Felt::as_u64), expected);
        }
        let mut edge = [MODULUS - 1; STATE_WIDTH];
        let mut ours = edge.map(Felt::new);
        reference_permute(&mut edge);
        permute(&mut ours);
        assert_eq!(ours.map(Felt::as_u64), edge);
    }

    #[test]
    fn inverse_sbox_inverts_the_sbox() {
        let inputs = [
            0u64,
            1,
            2,
            3,
            12345,
            MODULUS - 1,
            MODULUS + 5,
            u64::MAX,
            7,
            8,
            9,
            10,
        ];
        let mut roots = inputs;
        pow_inv_alpha(&mut roots);
        for (&x, &root) in inputs.iter().zip(&roots) {
            assert_eq!(field::canonical(root), pow(x, INV_ALPHA), "x = {x}");
            assert_eq!(field::canonical(pow7(root)), field::canonical(x));
        }
    }

    #[test]
    fn mds_matches_the_matrix_product() {
        let inputs: [State; 3] = [
            std::array::from_fn(|i| u64::MAX - 977 * i as u64),
            std::array::from_fn(|i| if i % 2 == 0 { u64::MAX } else { 0 }),
            std::array::from_fn(|i| 0x9e37_79b9_7f4a_7c15_u64.wrapping_mul(i as u64 + 1)),
        ];
        for state in inputs {
            let ark: State = std::array::from_fn(|i| MODULUS - 1 - i as u64);
            let mut fast = state;
            mds_add(&mut fast, &ark);
            for (i, &out) in fast.iter().enumerate() {
                let expected = (0..STATE_WIDTH).fold(u128::from(ark[i]), |acc, j| {
                    acc + u128::from(MDS_ROW[(j + STATE_WIDTH - i) % STATE_WIDTH])
                        * u128::from(state[j])
                }) % u128::from(MODULUS);
                assert_eq!(u128::from(field::canonical(out)), expected);
            }
        }
    }
}
