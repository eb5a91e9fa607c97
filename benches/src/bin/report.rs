//! `report`: runs every primitive at a built-in default size on every available backend,
//! checks the GPU's output against the CPU reference, prints one table, and writes it as
//! Markdown (`report.md`), JSON (`report.json`) and a bar chart (`report.svg`).
//!
//! ```text
//! cargo run --release -p benches --bin report [-- --out DIR] [--full] [--cpu-only]
//! ```
//!
//! By default the CPU's two longest rows run smaller (the Sometimes-Recurse table over 2^20
//! instead of 2^25, a TFHE batch of 16 instead of 256), so that the whole run takes under a
//! minute on 2 cores; the GPU rows keep their sizes, and the GPU is still checked against the
//! CPU (see `benches::prp` for the table). `--full` runs the CPU at the GPU's sizes too
//! (minutes on 2 cores). A progress bar on standard error names the row running.
//!
//! Without a usable GPU it prints the CPU rows and says why the GPU rows are missing. It exits
//! with status 1 if any GPU output differs from the CPU's.

use std::path::PathBuf;
use std::process::ExitCode;

use benches::progress::Progress;
use benches::table::{self, Check, Row};
use benches::{chacha, fhe, merkle as trees, msm as multiexp, pir, prp as permutations};
use clap::Parser;
use serde::Serialize;

/// Runs every primitive on every backend and writes the comparison.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// Folder for report.md and report.json (created if missing).
    #[arg(long, default_value = "report")]
    out: PathBuf,
    /// Run only the CPU rows, even when a GPU is present.
    #[arg(long)]
    cpu_only: bool,
    /// Run the CPU at full size too: the Sometimes-Recurse table over 2^25 and a TFHE batch
    /// of 256 (minutes on 2 cores; by default 2^20 and 16).
    #[arg(long)]
    full: bool,
}

/// The machine the report ran on.
#[derive(Debug, Serialize)]
struct Machine {
    cpu_threads: usize,
    gpu: Option<String>,
    cuda_driver: Option<String>,
    nvrtc: Option<String>,
    gpu_missing: Option<String>,
}

#[derive(Debug, Serialize)]
struct Report {
    unix_time: u64,
    /// `quick` (the default) or `full` (`--full`).
    sizes: &'static str,
    machine: Machine,
    rows: Vec<Row>,
}

/// The GPU rows, or why there are none.
/// The CPU runs' inputs and results, which the GPU runs are checked against.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
struct References<'a> {
    stream: &'a prp::ChaCha8,
    chacha: &'a chacha::Reference,
    permutations: (&'a permutations::Workload, &'a permutations::Reference),
    trees: &'a trees::Reference,
    hints: &'a pir::Reference,
    msm: &'a multiexp::Reference,
    fhe: &'a fhe::Reference,
}

#[cfg(feature = "cuda")]
fn gpu_rows(
    args: &Args,
    machine: &mut Machine,
    refs: &References,
    progress: &Progress,
) -> Result<Vec<Row>, String> {
    let (stream, reference) = (refs.stream, refs.chacha);
    let (tree_reference, hint_reference, msm_reference) = (refs.trees, refs.hints, refs.msm);
    if args.cpu_only {
        return Err("--cpu-only was given".to_owned());
    }
    let version = |(major, minor): (u32, u32)| format!("{major}.{minor}");
    let cuda = prp::Cuda::new().map_err(|e| e.to_string())?;
    let info = cuda.gpu().info();
    machine.gpu = Some(format!(
        "{} (sm_{}, {} SMs, {:.0} GiB)",
        info.name,
        info.compute_capability.number(),
        info.sm_count,
        info.total_memory as f64 / f64::from(1u32 << 30)
    ));
    machine.cuda_driver = kernels::driver_version().ok().map(version);
    machine.nvrtc = kernels::compiler_version().ok().map(version);
    progress.add_steps(
        chacha::CUDA_STEPS
            + permutations::CUDA_STEPS
            + trees::CUDA_STEPS
            + pir::CUDA_STEPS
            + multiexp::CUDA_STEPS
            + fhe::CUDA_STEPS,
    );
    let sizes = chacha::Sizes::default();
    let mut rows =
        chacha::cuda_rows(&cuda, sizes, stream, reference, progress).map_err(|e| e.to_string())?;
    let (work, reference) = refs.permutations;
    let permutation_rows = permutations::cuda_rows(&cuda, work, reference, progress);
    rows.extend(permutation_rows.map_err(|e| e.to_string())?);
    let merkle_gpu = merkle::Cuda::on(cuda.gpu().clone()).map_err(|e| e.to_string())?;
    let tree_rows = trees::cuda_rows(&merkle_gpu, tree_reference, progress);
    rows.extend(tree_rows.map_err(|e| e.to_string())?);
    let hints_gpu = pir_hints::Cuda::on(vec![cuda.gpu().clone()]).map_err(|e| e.to_string())?;
    let hint_rows = pir::cuda_rows(&hints_gpu, hint_reference, progress);
    rows.extend(hint_rows.map_err(|e| e.to_string())?);
    let msm_gpu = msm::Cuda::on(cuda.gpu().clone()).map_err(|e| e.to_string())?;
    let msm_rows = multiexp::cuda_rows(&msm_gpu, msm_reference, progress);
    rows.extend(msm_rows.map_err(|e| e.to_string())?);
    let fhe_rows = fhe::cuda_rows(cuda.gpu().clone(), refs.fhe, progress);
    rows.extend(fhe_rows.map_err(|e| e.to_string())?);
    Ok(rows)
}

#[cfg(not(feature = "cuda"))]
fn gpu_rows(_: &Args, _: &mut Machine, _: &References, _: &Progress) -> Result<Vec<Row>, String> {
    Err("built without the `cuda` feature".to_owned())
}

fn run(args: &Args) -> Result<bool, String> {
    let mut machine = Machine {
        cpu_threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        gpu: None,
        cuda_driver: None,
        nvrtc: None,
        gpu_missing: None,
    };
    let (prp_sizes, fhe_sizes) = match args.full {
        true => (permutations::Sizes::full(), fhe::Sizes::full()),
        false => (permutations::Sizes::quick(), fhe::Sizes::quick()),
    };
    let progress = Progress::new(
        chacha::CPU_STEPS
            + permutations::CPU_STEPS
            + trees::CPU_STEPS
            + pir::CPU_STEPS
            + multiexp::CPU_STEPS
            + fhe::CPU_STEPS,
    );
    let stream = chacha::fresh_stream();
    let (mut rows, reference) = chacha::cpu_rows(chacha::Sizes::default(), &stream, &progress)
        .map_err(|e| e.to_string())?;
    let work = permutations::Workload::new(prp_sizes).map_err(|e| e.to_string())?;
    let (cpu_rows, prp_reference) =
        permutations::cpu_rows(&work, &progress).map_err(|e| e.to_string())?;
    rows.extend(cpu_rows);
    let (tree_rows, tree_reference) = trees::cpu_rows(&progress).map_err(|e| e.to_string())?;
    rows.extend(tree_rows);
    let (hint_rows, hint_reference) = pir::cpu_rows(&progress).map_err(|e| e.to_string())?;
    rows.extend(hint_rows);
    let (msm_rows, msm_reference) = multiexp::cpu_rows(&progress).map_err(|e| e.to_string())?;
    rows.extend(msm_rows);
    let (fhe_rows, fhe_reference) =
        fhe::cpu_rows(fhe_sizes, &progress).map_err(|e| e.to_string())?;
    rows.extend(fhe_rows);
    let refs = References {
        stream: &stream,
        chacha: &reference,
        permutations: (&work, &prp_reference),
        trees: &tree_reference,
        hints: &hint_reference,
        msm: &msm_reference,
        fhe: &fhe_reference,
    };
    match gpu_rows(args, &mut machine, &refs, &progress) {
        Ok(gpu) => rows.extend(gpu),
        Err(why) => machine.gpu_missing = Some(why),
    }
    progress.finish();
    table::set_speedups(&mut rows);

    let sizes = if args.full { "full" } else { "quick" };
    let mut header = format!("CPU: {} threads\n", machine.cpu_threads);
    match (&machine.gpu, &machine.gpu_missing) {
        (Some(gpu), _) => {
            header += &format!(
                "GPU: {gpu}, CUDA driver {}, NVRTC {}\n",
                machine.cuda_driver.as_deref().unwrap_or("?"),
                machine.nvrtc.as_deref().unwrap_or("?")
            );
        }
        (None, Some(why)) => header += &format!("GPU rows missing: {why}\n"),
        (None, None) => {}
    }
    if !args.full {
        header += "Sizes: quick (the CPU's table over 2^20, its TFHE batch of 16; --full for 2^25 and 256)\n";
    }
    println!("{header}\n{}", table::text(&rows));

    let all_pass = rows.iter().all(|r| !matches!(r.check, Check::Fail(_)));
    let report = Report {
        unix_time: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        sizes,
        machine,
        rows,
    };
    let write = |name: &str, text: String| {
        let path = args.out.join(name);
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
    };
    std::fs::create_dir_all(&args.out)
        .map_err(|e| format!("cannot create {}: {e}", args.out.display()))?;
    write(
        "report.md",
        format!("{header}\n{}", table::markdown(&report.rows)),
    )?;
    let json = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
    write("report.json", json + "\n")?;
    write("report.svg", table::svg(&report.rows))?;
    println!(
        "wrote report.md, report.json and report.svg to {}",
        args.out.display()
    );
    Ok(all_pass)
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("report: a GPU output differs from the CPU reference");
            ExitCode::FAILURE
        }
        Err(why) => {
            eprintln!("report: {why}");
            ExitCode::FAILURE
        }
    }
}
