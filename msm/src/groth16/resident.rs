//! [`ResidentProver`]: the proving key's query vectors kept on the GPU for many proofs.

use ark_groth16::ProvingKey;

use super::{G1Query, Groth16Curve, QueryMsms, b_g2_bases, proof_methods};
use crate::{ContextOptions, Cuda, Error, MsmContext};

/// A Groth16 prover for one proving key whose five query vectors stay on one GPU, each in an
/// [`MsmContext`] made once, so that a proof uploads only its scalars.
///
/// The contexts take the same [`ContextOptions`]: with
/// [`shifted_bases`](ContextOptions::shifted_bases) each holds one copy of its query per
/// window (about 16 for 2^20 points), which needs
/// several GB for a circuit of 2^20 constraints, and is faster.
///
/// # Example
///
/// ```no_run
/// use ark_bls12_381::{Bls12_381, Fr};
/// use ark_groth16::Groth16;
/// use msm::groth16::{ResidentProver, SquareChain};
/// use msm::{ContextOptions, Cuda};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mut rng = ark_std::test_rng();
/// let circuit = SquareChain::new(Fr::from(3u64), Fr::from(7u64), 1 << 16, 1);
/// let key = Groth16::<Bls12_381>::generate_random_parameters_with_reduction(
///     circuit.without_witness(),
///     &mut rng,
/// )?;
/// let options = ContextOptions { shifted_bases: true, ..ContextOptions::default() };
/// let prover = ResidentProver::new(&Cuda::new()?, &key, options)?;
/// for _ in 0..3 {
///     let proof = prover.prove_random(circuit, &mut rng)?;
///     let verifying_key = ark_groth16::prepare_verifying_key(&key.vk);
///     assert!(Groth16::<Bls12_381>::verify_proof(
///         &verifying_key,
///         &proof,
///         &circuit.public_values()
///     )?);
/// }
/// # Ok(()) }
/// ```
pub struct ResidentProver<'k, E: Groth16Curve> {
    key: &'k ProvingKey<E>,
    /// One context per G1 query, in [`G1Query`]'s order; `None` for an empty query.
    g1: [Option<MsmContext<E::G1Config>>; 4],
    b_g2: Option<MsmContext<E::G2Config>>,
}

impl<E: Groth16Curve> std::fmt::Debug for ResidentProver<'_, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResidentProver")
            .field("g1", &self.g1)
            .field("b_g2", &self.b_g2)
            .finish_non_exhaustive()
    }
}

/// The G1 queries, in the order of [`ResidentProver`]'s contexts.
const G1_QUERIES: [G1Query; 4] = [G1Query::A, G1Query::BG1, G1Query::H, G1Query::L];

impl<'k, E: Groth16Curve> ResidentProver<'k, E> {
    /// Uploads `key`'s query vectors to the GPU of `cuda`, each into a context made with
    /// `options`.
    ///
    /// # Errors
    ///
    /// As [`Cuda::context`]: [`Error::InvalidWindow`], [`Error::BasesTooLarge`] when the
    /// queries (with their shifted copies) do not fit in the GPU's memory, [`Error::Gpu`].
    pub fn new(
        cuda: &Cuda,
        key: &'k ProvingKey<E>,
        options: ContextOptions,
    ) -> Result<Self, Error> {
        let mut g1 = [None, None, None, None];
        for (context, query) in g1.iter_mut().zip(G1_QUERIES) {
            *context = resident(cuda, query.bases(key), options)?;
        }
        Ok(Self {
            key,
            g1,
            b_g2: resident(cuda, b_g2_bases(key), options)?,
        })
    }

    /// The proving key.
    pub fn key(&self) -> &'k ProvingKey<E> {
        self.key
    }

    proof_methods!();
}

/// A context over `bases`, or `None` when there are none.
fn resident<C: crate::MsmCurve>(
    cuda: &Cuda,
    bases: &[ark_ec::short_weierstrass::Affine<C>],
    options: ContextOptions,
) -> Result<Option<MsmContext<C>>, Error> {
    if bases.is_empty() {
        return Ok(None);
    }
    cuda.context(bases, options).map(Some)
}

/// A context's MSM; the key's sizes are checked, so a context exists wherever scalars come.
fn context_msm<C: crate::MsmCurve>(
    context: Option<&MsmContext<C>>,
    scalars: &[C::ScalarField],
) -> Result<ark_ec::short_weierstrass::Projective<C>, Error> {
    match context {
        Some(context) => context.msm(scalars),
        None => Err(Error::LengthMismatch {
            bases: 0,
            scalars: scalars.len(),
        }),
    }
}

impl<E: Groth16Curve> QueryMsms<E> for ResidentProver<'_, E> {
    fn g1(&self, query: G1Query, scalars: &[E::ScalarField]) -> Result<E::G1, Error> {
        let index = G1_QUERIES.iter().position(|q| *q == query);
        context_msm(index.and_then(|i| self.g1[i].as_ref()), scalars)
    }

    fn b_g2(&self, scalars: &[E::ScalarField]) -> Result<E::G2, Error> {
        context_msm(self.b_g2.as_ref(), scalars)
    }
}
