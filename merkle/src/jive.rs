//! RpJive64_256, bit-compatible with winter-crypto 0.13.1
//! (`winter_crypto::hashers::RpJive64_256`): Rescue Prime on an 8-element state with Jive
//! compression for merges.
//!
//! The state holds the capacity in `s[0..4]`, the rate in `s[4..8]` and the digest in
//! `s[4..8]`. A round is Rp64_256's, `x^7, MDS, + ARK1[r], x^(1/7), MDS, + ARK2[r]`, seven per
//! permutation, with the circulant 8 x 8 matrix of first row [`MDS_ROW`] and this instance's
//! constants. `merge(L, R)` permutes `x = [L, R]` and returns `x[i] + x[4 + i] + y[i] +
//! y[4 + i]` for the permuted `y` (Jive). `hash_elements` sets `s[0] = 1` when the length is
//! not a multiple of 4, adds each chunk of four into the rate, pads a final partial chunk
//! with a one and zeros (written, not added), and permutes after each chunk. The constants
//! are the published instance's; `tests/winter.rs` checks them against winter-crypto.

use crate::digest::Digest;
use crate::field::{self, Felt, add_any};
use crate::hasher::{Hasher, sealed};
use crate::rescue::{cyclic, fold, negacyclic, pow_inv_alpha, pow7, unfold};

/// Elements in the permutation state.
pub const STATE_WIDTH: usize = 8;
/// Rounds per permutation.
pub const ROUNDS: usize = 7;
/// Elements absorbed per permutation.
const RATE: usize = 4;

/// First row of the circulant MDS matrix: `MDS[i][j] = MDS_ROW[(j - i) mod 8]`.
pub const MDS_ROW: [u64; STATE_WIDTH] = [23, 8, 13, 10, 7, 6, 21, 8];

/// Round constants added in the first half of each round (canonical values).
pub const ARK1: [[u64; STATE_WIDTH]; ROUNDS] = [
    [
        0x48dc4d4899f9ea51,
        0xf9ae2fdfb671c2a2,
        0xd5370967c6e931fd,
        0x68c8605b1712cb98,
        0x09cb4f4e60c7e35c,
        0xcc411fd2ecb7184e,
        0xd8ac59b4dc74caac,
        0x7a81fc5c89849737,
    ],
    [
        0x3503bcd9e97dedf2,
        0x2efb8e683dc769b9,
        0xdf5be4db53ec2f57,
        0xe24115bb13b12dba,
        0x78703700acdb1e6c,
        0x06ea36151155e79d,
        0xf54e5231f803cd33,
        0xd0142049d496aa65,
    ],
    [
        0xc5e156a585efbce8,
        0x16fb321e2803c594,
        0x629a135b4cbc4b90,
        0xa47c19f17c6122f3,
        0xf73fb577343a393e,
        0x37426c75c7c0acd7,
        0x26f6226e0bcd1599,
        0xcfcf1f71b232a6b0,
    ],
    [
        0xdd5016c3790109a5,
        0xcbfa7d1b0514b124,
        0xc35bd2fc284bdcbe,
        0x27b011e5661fee67,
        0x44a0d347e872f173,
        0xd2b5e0b8f83e6f53,
        0x697eee98a6be042a,
        0x59e3b9a6424b686a,
    ],
    [
        0xfcc42dfaa9787ba5,
        0x8b37afc23e2b8bbd,
        0x52e08d84e86667d5,
        0x443c2001b7e37af4,
        0x3226da2e2816de96,
        0xe7f7d866987ef7ed,
        0xcaa88bb146922f16,
        0x53ca795efd843970,
    ],
    [
        0x99f05e66ef2138e7,
        0xc967c7e09f5b8d77,
        0xb01e5c6cd3434d00,
        0x42b7280044f20d40,
        0x48446bfa283c9d01,
        0x52dcdc2d37ba4ee7,
        0xf58362fe1b35f4c6,
        0x25e9a1dde599478b,
    ],
    [
        0x815acf2b71c206f5,
        0x735dde3098e9aedd,
        0xd58f37ecea7571d9,
        0xe98697abebe24454,
        0x662bf4f9941897c5,
        0x4c59760b71c2ebab,
        0xeb5bc3da23eb4bd1,
        0xd1f11656eb857389,
    ],
];

/// Round constants added in the second half of each round (canonical values).
pub const ARK2: [[u64; STATE_WIDTH]; ROUNDS] = [
    [
        0x88d6000f340065ab,
        0x90360121bb76ba19,
        0x4533eb127a8d352b,
        0xf6c6461666615df2,
        0x5f9a5d7ddaf81433,
        0x7c37be07d68ba565,
        0xec99ad2e14346553,
        0xc451c6c465c7fe5b,
    ],
    [
        0x09d1cac488a5e34a,
        0x5d537898181b71ca,
        0xdec6f49134643525,
        0x1b48b1ca07a6b18e,
        0x82ac738f89fb1bdd,
        0x0908cc91dfee154f,
        0x8af85a7124835202,
        0xc7d790cef7bc0ea9,
    ],
    [
        0x633749756cff8d66,
        0x627adb8d9faa99e2,
        0xa9463bd5d97b5889,
        0xb1b24a08d03e4450,
        0xf19b380c0c2b9af2,
        0x27225943c47577c7,
        0xdbb5504da65f774e,
        0xd8e80153dc9d71d6,
    ],
    [
        0xf92748d77629c057,
        0x56063f1ce396cfab,
        0x7f16c812191adfec,
        0x83bf18af10987909,
        0xde782cfdade79980,
        0x41c6d4cbe4854f97,
        0xfdc98bfe3724684a,
        0x7a199803e43a9295,
    ],
    [
        0xa15389d8d9dd9a04,
        0xb35c9691c9debd23,
        0x9b5356e91d08be51,
        0xc728a3ffca5b56a1,
        0x5c4622e25a450c6a,
        0x1d3c0838581c96b9,
        0xac8f7185c6973979,
        0x706ddfad2aeb6c91,
    ],
    [
        0xc1426eff7b91f8aa,
        0xddc866f470fdb6c5,
        0xf172cd604c912846,
        0xf129c49dfcdd3ebb,
        0x47cdb7283d89477c,
        0x332f19abc517fc6b,
        0xe080445bd93d1ae6,
        0x59f77cc2fb1fa50b,
    ],
    [
        0x7fa28b567cf63297,
        0x18aab8654c1f7de1,
        0x467df2d6691d51c5,
        0xd1478088a7464cde,
        0x3b617a4ce55c301f,
        0x5bbae0ffffa2eef7,
        0x090b1b72fd19db1c,
        0xc85093e3704e2144,
    ],
];

/// The 8-element state, on plain forms as [`crate::rescue::State`].
type State = [u64; STATE_WIDTH];

/// [`ARK1`] in Montgomery form, for the GPU kernels.
#[cfg(feature = "cuda")]
pub(crate) const ARK1_MONT: [State; ROUNDS] = crate::rescue::to_mont_table(&ARK1);
/// [`ARK2`] in Montgomery form, for the GPU kernels.
#[cfg(feature = "cuda")]
pub(crate) const ARK2_MONT: [State; ROUNDS] = crate::rescue::to_mont_table(&ARK2);

/// RpJive64_256, the hash of winter-crypto's `RpJive64_256`, as a [`Hasher`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct RpJive64_256;

impl RpJive64_256 {
    /// Applies the permutation to `state` (canonical in, canonical out).
    pub fn permute(state: &mut [Felt; STATE_WIDTH]) {
        let mut held = state.map(Felt::as_u64);
        permute_state(&mut held);
        *state = held.map(|x| Felt::new(field::canonical(x)));
    }
}

/// The permutation on a [`State`] (plain forms).
fn permute_state(state: &mut State) {
    for r in 0..ROUNDS {
        for x in state.iter_mut() {
            *x = pow7(*x);
        }
        mds_add(state, &ARK1[r]);
        pow_inv_alpha(state);
        mds_add(state, &ARK2[r]);
    }
}

/// `state = MDS state + ark`: each input split into 32-bit halves, each half-vector
/// multiplied exactly over the integers by [`mds_integer`], and `lo + 2^32 hi + ark` reduced
/// once.
#[inline(always)]
fn mds_add(state: &mut State, ark: &State) {
    let lo = mds_integer(state.map(|x| x & 0xffff_ffff));
    let hi = mds_integer(state.map(|x| x >> 32));
    for (i, out) in state.iter_mut().enumerate() {
        // lo, hi < 96 * 2^32 < 2^39: the sum is below 2^72.
        let sum = u128::from(lo[i]) + (u128::from(hi[i]) << 32) + u128::from(ark[i]);
        *out = field::reduce96(sum);
    }
}

/// The circulant product `y[i] = sum_j MDS_ROW[(j - i) mod 8] x[j]` over the integers, for
/// `x[j] < 2^32`: `y = x h mod (t^8 - 1)` with `h[k] = MDS_ROW[-k mod 8]`, split by the
/// Chinese remainder theorem into a cyclic and a negacyclic product of length 4 (32 small
/// products instead of 64), recombined as `2y = (u + v, u - v)`.
#[inline(always)]
fn mds_integer(x: State) -> State {
    let (sum, difference) = fold::<STATE_WIDTH, 4>(x.map(|v| v as i64));
    let twice: State = unfold(
        cyclic(sum, MDS_KERNEL_CYCLIC),
        negacyclic(difference, MDS_KERNEL_NEGACYCLIC),
    )
    .map(|v: i64| v as u64);
    twice.map(|v| v >> 1)
}

/// `h mod (t^4 - 1)`, `h` as in [`mds_integer`].
const MDS_KERNEL_CYCLIC: [i64; 4] = mds_kernel(1);
/// `h mod (t^4 + 1)`.
const MDS_KERNEL_NEGACYCLIC: [i64; 4] = mds_kernel(-1);

/// `h[k] + sign h[k + 4]` for `k < 4`, `h[k] = MDS_ROW[-k mod 8]`.
const fn mds_kernel(sign: i64) -> [i64; 4] {
    let mut kernel = [0; 4];
    let mut k = 0;
    while k < 4 {
        let h = MDS_ROW[(STATE_WIDTH - k) % STATE_WIDTH] as i64;
        let h4 = MDS_ROW[(STATE_WIDTH - k - 4) % STATE_WIDTH] as i64;
        kernel[k] = h + sign * h4;
        k += 1;
    }
    kernel
}

impl Hasher for RpJive64_256 {
    const NAME: &'static str = "RpJive64_256";

    fn merge(left: &Digest, right: &Digest) -> Digest {
        let mut initial: State = [0; STATE_WIDTH];
        for (slot, element) in initial
            .iter_mut()
            .zip(left.elements().iter().chain(right.elements()))
        {
            *slot = element.as_u64();
        }
        let mut state = initial;
        permute_state(&mut state);
        Digest::new(std::array::from_fn(|i| {
            let sum = add_any(
                add_any(initial[i], initial[i + 4]),
                add_any(state[i], state[i + 4]),
            );
            Felt::new(field::canonical(sum))
        }))
    }

    fn hash_elements(elements: &[Felt]) -> Digest {
        let mut state: State = [0; STATE_WIDTH];
        if elements.len() % RATE != 0 {
            state[0] = 1;
        }
        for chunk in elements.chunks(RATE) {
            for (i, slot) in state[RATE..].iter_mut().enumerate() {
                *slot = match (chunk.get(i), i == chunk.len()) {
                    (Some(e), _) => add_any(*slot, e.as_u64()),
                    (None, true) => 1,
                    (None, false) => 0,
                };
            }
            permute_state(&mut state);
        }
        Digest::new(std::array::from_fn(|i| {
            Felt::new(field::canonical(state[RATE + i]))
        }))
    }
}

impl sealed::Sealed for RpJive64_256 {
    #[cfg(feature = "cuda")]
    const DEVICE: crate::cuda::DeviceHasher = crate::cuda::RP_JIVE64_256;
}
