//! PMIx client (Open MPI's `mpirun`/`prterun`, `srun --mpi=pmix`), loaded at run time.

use super::pm::ProcessManager;
use crate::error::Result;

/// Joins the PMIx server named by the environment; `None` when no PMIx launcher started us.
pub fn connect() -> Result<Option<Box<dyn ProcessManager>>> {
    Ok(None)
}

/// Why the PMIx client library could not be loaded, if it was tried and failed.
pub fn load_error() -> Option<String> {
    None
}
