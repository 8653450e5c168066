//! skillmem's store: the SQLite file (`db`: connection, migrations, self-heal) and skill memory
//! over it (`memory`: notes and their history, the catalog, recall, the `<skill-memory>` block,
//! a session's calls and the use rule). ARCHITECTURE.md, "crates/store", gives its invariant
//! and its API boundary.

pub mod db;
pub mod memory;

// The crates below, under the module names the code has always used (`crate::text::…`).
use skillmem_config as config;
use skillmem_embed as embed;
use skillmem_error as error;
use skillmem_index as index;
use skillmem_skillmd as skillmd;
use skillmem_text as text;
