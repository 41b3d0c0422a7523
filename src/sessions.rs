//! Exports of MPI-4 Sessions (see `core/src/abi/api/sessions.rs`).

use std::ffi::{c_char, c_int};

use hcomm_core::abi::api;
use hcomm_core::abi::objects::CommErrhandlerFn;
use hcomm_core::export_mpi_functions;

type Session = c_int;
type Info = c_int;
type Group = c_int;
type Errhandler = c_int;

unsafe fn session_init(i: Info, e: Errhandler, s: *mut Session) -> c_int {
    api::session_init("MPI_Session_init", i, e, s)
}
unsafe fn session_finalize(s: *mut Session) -> c_int {
    api::session_finalize("MPI_Session_finalize", s)
}
unsafe fn session_get_num_psets(s: Session, i: Info, n: *mut c_int) -> c_int {
    api::session_get_num_psets("MPI_Session_get_num_psets", s, i, n)
}
unsafe fn session_get_nth_pset(
    s: Session,
    i: Info,
    n: c_int,
    len: *mut c_int,
    name: *mut c_char,
) -> c_int {
    api::session_get_nth_pset("MPI_Session_get_nth_pset", s, i, n, len, name)
}
unsafe fn session_get_info(s: Session, i: *mut Info) -> c_int {
    api::session_get_info("MPI_Session_get_info", s, i)
}
unsafe fn session_get_pset_info(s: Session, p: *const c_char, i: *mut Info) -> c_int {
    api::session_get_pset_info("MPI_Session_get_pset_info", s, p, i)
}
unsafe fn group_from_session_pset(s: Session, p: *const c_char, g: *mut Group) -> c_int {
    api::group_from_session_pset("MPI_Group_from_session_pset", s, p, g)
}
unsafe fn session_create_errhandler(f: Option<CommErrhandlerFn>, e: *mut Errhandler) -> c_int {
    api::session_create_errhandler("MPI_Session_create_errhandler", f, e)
}
unsafe fn session_set_errhandler(s: Session, e: Errhandler) -> c_int {
    api::session_set_errhandler("MPI_Session_set_errhandler", s, e)
}
unsafe fn session_get_errhandler(s: Session, e: *mut Errhandler) -> c_int {
    api::session_get_errhandler("MPI_Session_get_errhandler", s, e)
}
unsafe fn session_call_errhandler(s: Session, code: c_int) -> c_int {
    api::session_call_errhandler("MPI_Session_call_errhandler", s, code)
}

export_mpi_functions! {
    fn MPI_Session_init / PMPI_Session_init(info: Info, errhandler: Errhandler, session: *mut Session) -> c_int => session_init;
    fn MPI_Session_finalize / PMPI_Session_finalize(session: *mut Session) -> c_int => session_finalize;
    fn MPI_Session_get_num_psets / PMPI_Session_get_num_psets(session: Session, info: Info, npset_names: *mut c_int) -> c_int => session_get_num_psets;
    fn MPI_Session_get_nth_pset / PMPI_Session_get_nth_pset(session: Session, info: Info, n: c_int, pset_len: *mut c_int, pset_name: *mut c_char) -> c_int => session_get_nth_pset;
    fn MPI_Session_get_info / PMPI_Session_get_info(session: Session, info_used: *mut Info) -> c_int => session_get_info;
    fn MPI_Session_get_pset_info / PMPI_Session_get_pset_info(session: Session, pset_name: *const c_char, info: *mut Info) -> c_int => session_get_pset_info;
    fn MPI_Group_from_session_pset / PMPI_Group_from_session_pset(session: Session, pset_name: *const c_char, newgroup: *mut Group) -> c_int => group_from_session_pset;
    fn MPI_Session_create_errhandler / PMPI_Session_create_errhandler(session_errhandler_fn: Option<CommErrhandlerFn>, errhandler: *mut Errhandler) -> c_int => session_create_errhandler;
    fn MPI_Session_set_errhandler / PMPI_Session_set_errhandler(session: Session, errhandler: Errhandler) -> c_int => session_set_errhandler;
    fn MPI_Session_get_errhandler / PMPI_Session_get_errhandler(session: Session, errhandler: *mut Errhandler) -> c_int => session_get_errhandler;
    fn MPI_Session_call_errhandler / PMPI_Session_call_errhandler(session: Session, errorcode: c_int) -> c_int => session_call_errhandler;
}
