//! A whole run as shards in one process, each written to a work directory as it finishes, so
//! that a run that is interrupted (a signal, a crash, a lost machine) resumes where it
//! stopped: finished shards are read back, not made again, and the result is the same bytes.

use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::hints::Hints;
use crate::{Database, HintGenerator, Job};

/// What [`ShardedRun::run`] reports about each shard, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShardEvent {
    /// Shard `index` was found finished in the work directory and is kept.
    Kept {
        /// The shard's number, `0 .. k`.
        index: u64,
        /// Its blocks.
        blocks: Range<u64>,
    },
    /// Shard `index` is being generated.
    Started {
        /// The shard's number, `0 .. k`.
        index: u64,
        /// Its blocks.
        blocks: Range<u64>,
        /// Why it is made again, if a file for it was there but unusable (damaged).
        replacing: Option<String>,
    },
    /// Shard `index` was generated and written.
    Written {
        /// The shard's number, `0 .. k`.
        index: u64,
        /// Its file.
        path: PathBuf,
    },
}

/// A job split into `k` shards over block ranges, each kept as a hint file in a work directory
/// ([`ShardedRun::shard_path`]). Shard `i` of a job over blocks `s .. t` covers blocks
/// `s + i (t - s) / k .. s + (i + 1) (t - s) / k`, the ranges the README's scripts use.
///
/// Files are written to a temporary file and renamed when complete ([`Hints::write`]), so a
/// shard file is either whole or absent. A shard file is kept only if it reads back whole
/// (its digest matches) with the job's parameters, key and blocks; a damaged one is made
/// again, and one of another job is an error (a work directory belongs to one job).
#[derive(Clone, Debug)]
pub struct ShardedRun<'a> {
    job: Job<'a>,
    shards: u64,
    work_dir: PathBuf,
}

impl<'a> ShardedRun<'a> {
    /// `job` in `shards` shards kept in `work_dir`. Errors unless `1 <= shards <=` the job's
    /// blocks.
    pub fn new(job: Job<'a>, shards: u64, work_dir: &Path) -> Result<Self, Error> {
        let blocks = job.blocks().end - job.blocks().start;
        if shards == 0 || shards > blocks {
            return Err(Error::Parameter(format!(
                "{shards} shards of {blocks} blocks: give from 1 to {blocks} shards"
            )));
        }
        Ok(Self {
            job,
            shards,
            work_dir: work_dir.to_path_buf(),
        })
    }

    /// `k`, the number of shards.
    pub fn shards(&self) -> u64 {
        self.shards
    }

    /// The blocks of shard `index` (`0 ..= k`: `index = k`, or any larger index, gives the
    /// empty range at the end).
    pub fn shard_blocks(&self, index: u64) -> Range<u64> {
        let Range { start, end } = self.job.blocks();
        // (t - s) i / k is at most t - s, and 128 bits hold the product.
        let cut = |i: u64| {
            let i = i.min(self.shards);
            start + (u128::from(end - start) * u128::from(i) / u128::from(self.shards)) as u64
        };
        cut(index)..cut(index.saturating_add(1))
    }

    /// The file of shard `index`: `shard-INDEX-of-K.hints` in the work directory.
    pub fn shard_path(&self, index: u64) -> PathBuf {
        self.work_dir
            .join(format!("shard-{index}-of-{}.hints", self.shards))
    }

    /// The job of shard `index`.
    fn shard_job(&self, index: u64) -> Result<Job<'a>, Error> {
        self.job.clone().with_blocks(self.shard_blocks(index))
    }

    /// The units of work of the whole run (as [`Job::work`] counts them, over every shard).
    pub fn work(&self) -> Result<u64, Error> {
        (0..self.shards).try_fold(0u64, |sum, index| {
            let work = self.shard_job(index)?.work().0;
            sum.checked_add(work)
                .ok_or_else(|| Error::Parameter("the run's work does not fit in a u64".into()))
        })
    }

    /// Makes every shard not already finished in the work directory (creating it if need be),
    /// then combines all shards into the hints of the whole job. `progress` counts the work of
    /// finished shards, kept or made ([`ShardedRun::work`] in all); `event` hears of each
    /// shard. Leftover temporary files of an interrupted write are removed first.
    pub fn run(
        &self,
        generator: &impl HintGenerator,
        db: &Database<'_>,
        progress: &(dyn Fn(u64) + Sync),
        event: &mut dyn FnMut(ShardEvent),
    ) -> Result<Hints, Error> {
        db.check(self.job.params())?;
        let io = |e| Error::io(&self.work_dir, e);
        std::fs::create_dir_all(&self.work_dir).map_err(io)?;
        self.remove_partial_files()?;
        for index in 0..self.shards {
            let job = self.shard_job(index)?;
            let path = self.shard_path(index);
            let replacing = match self.finished_shard(&job, &path)? {
                Finished::Whole => {
                    progress(job.work().0);
                    event(ShardEvent::Kept {
                        index,
                        blocks: job.blocks(),
                    });
                    continue;
                }
                Finished::Absent => None,
                Finished::Damaged(why) => Some(why),
            };
            event(ShardEvent::Started {
                index,
                blocks: job.blocks(),
                replacing,
            });
            generator
                .generate_with_progress(&job, db, progress)?
                .write(&path)?;
            event(ShardEvent::Written { index, path });
        }
        self.combine()
    }

    /// The hints of every shard file, combined in block order, holding two at a time.
    fn combine(&self) -> Result<Hints, Error> {
        let mut all = Hints::read(&self.shard_path(0))?;
        for index in 1..self.shards {
            all.combine(&Hints::read(&self.shard_path(index))?)?;
        }
        Ok(all)
    }

    /// Whether shard `job`'s file at `path` is there, whole and of this job. Errors if it
    /// is a hint file of another job.
    fn finished_shard(&self, job: &Job<'_>, path: &Path) -> Result<Finished, Error> {
        if !path.exists() {
            return Ok(Finished::Absent);
        }
        // The header first: a file of another job is an error even if it is damaged too.
        if let Ok(header) = Hints::read_header(path) {
            let ours = (*job.params(), job.key().fingerprint(), job.blocks());
            if (header.params, header.fingerprint, header.blocks.clone()) != ours {
                return Err(Error::Hints(format!(
                    "{} is a shard of another run (parameters, key or blocks differ); give \
                     each run its own work directory",
                    path.display()
                )));
            }
        }
        Ok(match Hints::read(path) {
            Ok(_) => Finished::Whole,
            Err(why) => Finished::Damaged(why.to_string()),
        })
    }

    /// Removes the temporary files that [`Hints::write`] leaves in the work directory when
    /// the process is killed mid-write.
    fn remove_partial_files(&self) -> Result<(), Error> {
        let io = |e| Error::io(&self.work_dir, e);
        for entry in std::fs::read_dir(&self.work_dir).map_err(io)? {
            let path = entry.map_err(io)?.path();
            let name = path.file_name().and_then(|name| name.to_str());
            if name
                .is_some_and(|name| name.starts_with(".pir-hints-") && name.ends_with(".partial"))
            {
                std::fs::remove_file(&path).map_err(|e| Error::io(&path, e))?;
            }
        }
        Ok(())
    }
}

/// The state of a shard's file.
enum Finished {
    /// Whole and of this job: kept.
    Whole,
    /// No file.
    Absent,
    /// A file that does not read back whole, and why.
    Damaged(String),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Cpu, MasterKey, Params, Scheme, synthetic_database};

    #[test]
    fn shards_cover_the_job_and_resume() {
        let entries = synthetic_database(4, 500, 8).unwrap();
        let db = Database::new(&entries, 8).unwrap();
        let params = Params::new(Scheme::Rms24, 500, 8)
            .unwrap()
            .with_block_size(20)
            .unwrap()
            .with_hints(40, 30)
            .unwrap();
        let key = MasterKey::new(&[5; 32]);
        let job = Job::new(params, &key).with_blocks(3..25).unwrap();
        let whole = Cpu.generate(&job, &db).unwrap();
        let dir = tempfile::tempdir().unwrap();
        assert!(ShardedRun::new(job.clone(), 0, dir.path()).is_err());
        assert!(ShardedRun::new(job.clone(), 23, dir.path()).is_err());

        let run = ShardedRun::new(job.clone(), 5, dir.path()).unwrap();
        let cuts: Vec<_> = (0..5).map(|i| run.shard_blocks(i)).collect();
        assert_eq!(cuts, [3..7, 7..11, 11..16, 16..20, 20..25]);
        assert_eq!(run.work().unwrap(), 5 * 70);
        let mut events = Vec::new();
        let hints = run
            .run(&Cpu, &db, &|_| {}, &mut |e| events.push(e))
            .unwrap();
        assert_eq!(hints, whole);
        assert_eq!(events.len(), 10);

        // Shard 2 damaged, shard 3 lost, a leftover temporary file: two shards made again.
        let damaged = run.shard_path(2);
        let mut bytes = std::fs::read(&damaged).unwrap();
        *bytes.last_mut().unwrap() ^= 1;
        std::fs::write(&damaged, bytes).unwrap();
        std::fs::remove_file(run.shard_path(3)).unwrap();
        std::fs::write(dir.path().join(".pir-hints-x.partial"), b"half").unwrap();
        let mut events = Vec::new();
        let hints = run
            .run(&Cpu, &db, &|_| {}, &mut |e| events.push(e))
            .unwrap();
        assert_eq!(hints, whole);
        let started: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                ShardEvent::Started {
                    index, replacing, ..
                } => Some((*index, replacing.is_some())),
                _ => None,
            })
            .collect();
        assert_eq!(started, [(2, true), (3, false)]);
        assert!(!dir.path().join(".pir-hints-x.partial").exists());

        // A work directory of another job is refused.
        let other = Job::new(params, &key).with_blocks(0..22).unwrap();
        let run = ShardedRun::new(other, 5, dir.path()).unwrap();
        let said = run.run(&Cpu, &db, &|_| {}, &mut |_| {}).unwrap_err();
        assert!(said.to_string().contains("another run"), "{said}");
    }
}
