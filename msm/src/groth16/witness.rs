//! The prover's CPU side: the circuit synthesized into its matrices and assignment, the
//! checks against the proving key, and the QAP witness (the coefficients of `h`) through
//! ark-groth16's libsnark reduction.

use ark_ec::pairing::Pairing;
use ark_ff::PrimeField;
use ark_groth16::ProvingKey;
use ark_groth16::r1cs_to_qap::{LibsnarkReduction, R1CSToQAP};
use ark_poly::{EvaluationDomain, GeneralEvaluationDomain};
use ark_relations::r1cs::{
    ConstraintMatrices, ConstraintSynthesizer, ConstraintSystem, OptimizationGoal, SynthesisError,
};
use rayon::prelude::*;

use crate::Error;

/// A synthesized circuit: its constraint matrices and its full assignment.
pub(super) struct Witness<F: PrimeField> {
    matrices: ConstraintMatrices<F>,
    /// `1`, the public inputs, then the private witness (the variables' order in the
    /// matrices and in the key's queries).
    full: Vec<F>,
}

impl<F: PrimeField> Witness<F> {
    /// Synthesizes `circuit` in proving mode, as ark-groth16's prover does (constraints
    /// optimized for count, linear combinations inlined).
    ///
    /// # Errors
    ///
    /// [`Error::Synthesis`] when the circuit fails to synthesize, [`Error::Unsatisfied`] when
    /// its assignment breaks a constraint.
    pub(super) fn synthesize<C: ConstraintSynthesizer<F>>(circuit: C) -> Result<Self, Error> {
        let cs = ConstraintSystem::new_ref();
        cs.set_optimization_goal(OptimizationGoal::Constraints);
        circuit.generate_constraints(cs.clone())?;
        cs.finalize();
        let matrices = cs.to_matrices().ok_or(SynthesisError::MissingCS)?;
        let system = cs.borrow().ok_or(SynthesisError::MissingCS)?;
        let full = [
            system.instance_assignment.as_slice(),
            system.witness_assignment.as_slice(),
        ]
        .concat();
        drop(system);
        let witness = Self { matrices, full };
        witness.check_satisfied()?;
        Ok(witness)
    }

    /// Checks every constraint `<a_i, z> * <b_i, z> = <c_i, z>` on the assignment `z`.
    fn check_satisfied(&self) -> Result<(), Error> {
        let m = &self.matrices;
        let variables = m.num_instance_variables + m.num_witness_variables;
        if self.full.len() != variables {
            return Err(SynthesisError::AssignmentMissing.into());
        }
        let unsatisfied = (0..m.num_constraints).into_par_iter().find_first(|&i| {
            let value = |row: &[(F, usize)]| dot(row, &self.full);
            match (value(&m.a[i]), value(&m.b[i]), value(&m.c[i])) {
                (Some(a), Some(b), Some(c)) => a * b != c,
                _ => true,
            }
        });
        match unsatisfied {
            Some(constraint) => Err(Error::Unsatisfied { constraint }),
            None => Ok(()),
        }
    }

    /// The public inputs and the private witness, without the leading `1`: the scalars of the
    /// A and B queries (after their first point).
    pub(super) fn assignment(&self) -> &[F] {
        self.full.get(1..).unwrap_or_default()
    }

    /// The private witness: the scalars of the L query.
    pub(super) fn private(&self) -> &[F] {
        self.full
            .get(self.matrices.num_instance_variables..)
            .unwrap_or_default()
    }

    /// The size of the QAP's evaluation domain (constraints plus instance variables, rounded
    /// up as arkworks' `GeneralEvaluationDomain` does).
    fn domain_size(&self) -> Result<usize, Error> {
        let m = &self.matrices;
        let domain =
            GeneralEvaluationDomain::<F>::new(m.num_constraints + m.num_instance_variables)
                .ok_or(SynthesisError::PolynomialDegreeTooLarge)?;
        Ok(domain.size())
    }

    /// Checks that `key` was made for a circuit of this shape: every query as long as the
    /// variables (or the domain) it serves.
    ///
    /// # Errors
    ///
    /// [`Error::KeyMismatch`] naming the first query that does not fit.
    pub(super) fn check_key<E: Pairing<ScalarField = F>>(
        &self,
        key: &ProvingKey<E>,
    ) -> Result<(), Error> {
        let m = &self.matrices;
        let variables = m.num_instance_variables + m.num_witness_variables;
        let expected = [
            ("a_query", key.a_query.len(), variables),
            ("b_g1_query", key.b_g1_query.len(), variables),
            ("b_g2_query", key.b_g2_query.len(), variables),
            ("h_query", key.h_query.len(), self.domain_size()? - 1),
            ("l_query", key.l_query.len(), m.num_witness_variables),
            (
                "vk.gamma_abc_g1",
                key.vk.gamma_abc_g1.len(),
                m.num_instance_variables,
            ),
        ];
        match expected.iter().find(|(_, key, circuit)| key != circuit) {
            Some(&(query, key, circuit)) => Err(Error::KeyMismatch {
                query,
                key,
                circuit,
            }),
            None => Ok(()),
        }
    }

    /// The coefficients of `h(X) = (A(X) B(X) - C(X)) / Z(X)`, one per point of the domain
    /// (the last is zero), by ark-groth16's libsnark reduction: FFTs on the CPU.
    pub(super) fn qap_h(&self) -> Result<Vec<F>, Error> {
        let m = &self.matrices;
        Ok(LibsnarkReduction::witness_map_from_matrices::<
            F,
            GeneralEvaluationDomain<F>,
        >(
            m,
            m.num_instance_variables,
            m.num_constraints,
            &self.full,
        )?)
    }
}

/// `<row, z>` for one sparse row of a constraint matrix; `None` when the row names a variable
/// past the assignment.
fn dot<F: PrimeField>(row: &[(F, usize)], z: &[F]) -> Option<F> {
    row.iter()
        .try_fold(F::zero(), |sum, (coefficient, variable)| {
            Some(sum + *z.get(*variable)? * coefficient)
        })
}
