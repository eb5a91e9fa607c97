//! Parameter validation: the predefined sets are valid, caller-defined sets are checked field
//! by field, and every bad value is an error naming the field.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use fhe_pbs::{
    DecompositionBaseLog, DecompositionLevelCount, DecompositionParams, Error, GlweDimension,
    LweDimension, NoiseDistribution, PARAM_MESSAGE_2_CARRY_2, PARAM_TEST_INSECURE, ParameterSpec,
    Parameters, PolynomialSize,
};

fn field_of<T: std::fmt::Debug>(result: Result<T, Error>) -> &'static str {
    match result {
        Err(Error::InvalidParameter { name, .. }) => name,
        other => panic!("expected InvalidParameter, got {other:?}"),
    }
}

#[test]
fn predefined_sets_are_valid_and_as_specified() {
    for params in [PARAM_MESSAGE_2_CARRY_2, PARAM_TEST_INSECURE] {
        assert_eq!(Parameters::new(*params.spec()), Ok(params));
    }
    let p = PARAM_MESSAGE_2_CARRY_2;
    assert_eq!(p.lwe_dimension(), LweDimension(918));
    assert_eq!(p.glwe_dimension(), GlweDimension(1));
    assert_eq!(p.polynomial_size(), PolynomialSize(2048));
    assert_eq!(p.big_lwe_dimension(), LweDimension(2048));
    assert_eq!(
        p.lwe_noise(),
        NoiseDistribution::TUniform { bound_log2: 45 }
    );
    assert_eq!(
        p.glwe_noise(),
        NoiseDistribution::TUniform { bound_log2: 17 }
    );
    assert_eq!(
        p.pbs_decomposition(),
        DecompositionParams::new(23, 1).unwrap()
    );
    assert_eq!(
        p.ks_decomposition(),
        DecompositionParams::new(4, 4).unwrap()
    );
    assert_eq!(p.plaintext_modulus(), 16);
    assert_eq!(p.delta(), 1 << 59);
    let t = PARAM_TEST_INSECURE;
    assert_eq!(t.lwe_dimension(), LweDimension(256));
    assert_eq!(t.polynomial_size(), PolynomialSize(1024));
    assert_eq!(
        t.lwe_noise(),
        NoiseDistribution::Gaussian {
            std: 2f64.powi(-30)
        }
    );
    assert_eq!(
        t.glwe_noise(),
        NoiseDistribution::Gaussian {
            std: 2f64.powi(-50)
        }
    );
    assert_eq!(t.pbs_decomposition().base_log(), DecompositionBaseLog(23));
    assert_eq!(
        t.ks_decomposition().level_count(),
        DecompositionLevelCount(4)
    );
}

#[test]
fn caller_defined_sets_are_validated() {
    let base = *PARAM_TEST_INSECURE.spec();
    for n in [512, 2048, 4096, 8192] {
        let spec = ParameterSpec {
            polynomial_size: PolynomialSize(n),
            ..base
        };
        assert!(Parameters::new(spec).is_ok(), "N = {n}");
    }
    for n in [0, 256, 1000, 16384] {
        let spec = ParameterSpec {
            polynomial_size: PolynomialSize(n),
            ..base
        };
        assert_eq!(
            field_of(Parameters::new(spec)),
            "polynomial_size",
            "N = {n}"
        );
    }
    let spec = ParameterSpec {
        glwe_dimension: GlweDimension(0),
        ..base
    };
    assert_eq!(field_of(Parameters::new(spec)), "glwe_dimension");
    let spec = ParameterSpec {
        glwe_dimension: GlweDimension(usize::MAX / 2),
        ..base
    };
    assert_eq!(field_of(Parameters::new(spec)), "glwe_dimension");
    let spec = ParameterSpec {
        lwe_dimension: LweDimension(0),
        ..base
    };
    assert_eq!(field_of(Parameters::new(spec)), "lwe_dimension");
    for std in [f64::NAN, f64::INFINITY, -1e-9, 0.5] {
        let spec = ParameterSpec {
            lwe_noise: NoiseDistribution::Gaussian { std },
            ..base
        };
        assert_eq!(field_of(Parameters::new(spec)), "lwe_noise", "std = {std}");
    }
    let spec = ParameterSpec {
        glwe_noise: NoiseDistribution::TUniform { bound_log2: 63 },
        ..base
    };
    assert_eq!(field_of(Parameters::new(spec)), "glwe_noise");
    // A bad decomposition cannot reach a ParameterSpec: only DecompositionParams::new makes
    // one, and it refuses them.
    for (base_log, levels) in [(33, 2), (0, 2), (2, 0), (usize::MAX, 2), (65, 1)] {
        assert_eq!(
            field_of(DecompositionParams::new(base_log, levels)),
            "decomposition",
            "{base_log} x {levels}"
        );
    }
    for p in [0, 1, 12, 2048] {
        let spec = ParameterSpec {
            plaintext_modulus: p,
            ..base
        };
        assert_eq!(
            field_of(Parameters::new(spec)),
            "plaintext_modulus",
            "p = {p}"
        );
    }
    let spec = ParameterSpec {
        plaintext_modulus: 1024,
        ..base
    };
    assert!(Parameters::new(spec).is_ok());
    // The error message names the field and the rule.
    let spec = ParameterSpec {
        polynomial_size: PolynomialSize(1000),
        ..base
    };
    let message = Parameters::new(spec).unwrap_err().to_string();
    assert!(
        message.contains("polynomial_size") && message.contains("power of two"),
        "{message}"
    );
}

#[test]
fn noise_variances() {
    let t = NoiseDistribution::TUniform { bound_log2: 3 };
    // Values -8..=8, end points with half weight: (2 * 64 + 1) / 6.
    assert!((t.variance() - 129.0 / 6.0).abs() < 1e-9);
    let g = NoiseDistribution::Gaussian {
        std: 2f64.powi(-50),
    };
    assert!((g.variance() - (2f64.powi(28) + 1.0 / 12.0)).abs() < 1e-3);
}
