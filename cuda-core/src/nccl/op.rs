//! [`ReduceOp`]: how a reduction combines the ranks' values, and [`PreMulSum`], the custom
//! operation a communicator makes.

use std::fmt;
use std::sync::Arc;

use super::communicator::{now_or_after_group, refuse_in_group, CommInner, Communicator};
use super::element::{DataType, Element};
use crate::driver::nccl::nccl;
use crate::error::{Error, Result};

/// How a reduction (`all_reduce`, `reduce`, `reduce_scatter`) combines the ranks' values
/// (`ncclRedOp_t`).
#[doc(alias = "ncclRedOp_t")]
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum ReduceOp<'a> {
    /// `ncclSum`.
    Sum,
    /// `ncclProd`.
    Prod,
    /// `ncclMin`.
    Min,
    /// `ncclMax`.
    Max,
    /// `ncclAvg`: the sum divided by the number of ranks.
    Avg,
    /// Each rank's values multiplied by a factor, then summed: a [`PreMulSum`] of the same
    /// communicator and element type (checked before NCCL).
    PreMulSum(&'a PreMulSum),
}

impl ReduceOp<'_> {
    /// The `ncclRedOp_t` value for a call on `comm` over `data_type`; a custom operation of
    /// another communicator or type is refused.
    pub(crate) fn code_for(&self, comm: &Arc<CommInner>, data_type: DataType) -> Result<i32> {
        Ok(match self {
            ReduceOp::PreMulSum(op) => {
                if !Arc::ptr_eq(&op.comm, comm) {
                    return Err(Error::InvalidArgument {
                        name: "op",
                        reason: "a PreMulSum of another communicator: NCCL's custom operations \
                                 are their communicator's own"
                            .to_owned(),
                    });
                }
                if op.data_type != data_type {
                    return Err(Error::InvalidArgument {
                        name: "op",
                        reason: format!(
                            "a PreMulSum made for {}, and the call's elements are {data_type}",
                            op.data_type
                        ),
                    });
                }
                op.code
            }
            builtin => builtin.builtin_code().unwrap_or_default(),
        })
    }

    /// The `ncclRedOp_t` value of a built-in operation (checked against `nccl.h` by the tests).
    fn builtin_code(&self) -> Option<i32> {
        match self {
            ReduceOp::Sum => Some(0),
            ReduceOp::Prod => Some(1),
            ReduceOp::Max => Some(2),
            ReduceOp::Min => Some(3),
            ReduceOp::Avg => Some(4),
            ReduceOp::PreMulSum(_) => None,
        }
    }
}

/// A custom reduction (`ncclRedOpCreatePreMulSum`): each rank's values multiplied by its
/// factor, then summed, as [`ReduceOp::PreMulSum`]. Owned by its communicator (which it keeps
/// alive) and for one element type; destroyed when dropped (`ncclRedOpDestroy`), which the
/// borrow of a [`ReduceOp`] holds off until no call uses it.
///
/// ```no_run
/// use cuda_core::nccl::{Communicator, ReduceOp};
/// use cuda_core::{Buffer, Stream};
///
/// fn average(comm: &Communicator, grads: &mut Buffer, stream: &Stream) -> cuda_core::Result<()> {
///     // Each rank scales its own values by 1/size before the sum.
///     let scaled = comm.pre_mul_sum(1.0f32 / comm.size() as f32)?;
///     comm.all_reduce_in_place::<f32>(grads, ReduceOp::PreMulSum(&scaled), stream)
/// }
/// ```
#[doc(alias = "ncclRedOpCreatePreMulSum")]
pub struct PreMulSum {
    comm: Arc<CommInner>,
    code: i32,
    data_type: DataType,
}

impl fmt::Debug for PreMulSum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreMulSum")
            .field("op", &self.code)
            .field("data_type", &self.data_type)
            .finish_non_exhaustive()
    }
}

impl PreMulSum {
    /// The element type it was made for.
    pub fn data_type(&self) -> DataType {
        self.data_type
    }
}

impl Communicator {
    /// A custom reduction of this communicator over `T`: each rank's values times `factor`,
    /// then summed (`ncclRedOpCreatePreMulSum`, the factor read before the call returns).
    #[doc(alias = "ncclRedOpCreatePreMulSum")]
    pub fn pre_mul_sum<T: Element>(&self, factor: T) -> Result<PreMulSum> {
        refuse_in_group("making a custom operation")?;
        let nccl = nccl()?;
        let inner = &self.inner;
        let mut calls = inner.lock();
        let handle = inner.live(&mut calls, nccl)?;
        // SAFETY: `T` is plain data (`Pod`): its bytes, all initialised, are read for as long
        // as `factor` lives.
        let bytes = unsafe {
            std::slice::from_raw_parts((&factor as *const T).cast::<u8>(), std::mem::size_of::<T>())
        };
        let code = nccl.red_op_create_pre_mul_sum(handle, bytes, T::DATA_TYPE.code())?;
        Ok(PreMulSum {
            comm: Arc::clone(inner),
            code,
            data_type: T::DATA_TYPE,
        })
    }
}

impl Drop for PreMulSum {
    fn drop(&mut self) {
        let (comm, code) = (Arc::clone(&self.comm), self.code);
        now_or_after_group(move || {
            let Ok(nccl) = nccl() else { return };
            let _calls = comm.lock();
            // An aborted or finalized communicator took its operations with it.
            if let Some(handle) = comm.handle() {
                if let Err(e) = nccl.red_op_destroy(code, handle) {
                    log::error!("destroying an NCCL custom operation: {e}");
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn built_in_codes_are_the_headers() {
        use super::ReduceOp;
        for (op, name) in [
            (ReduceOp::Sum, "ncclSum"),
            (ReduceOp::Prod, "ncclProd"),
            (ReduceOp::Max, "ncclMax"),
            (ReduceOp::Min, "ncclMin"),
            (ReduceOp::Avg, "ncclAvg"),
        ] {
            let code = op.builtin_code().map(|c| c as u32);
            assert_eq!(code, crate::driver::nccl::codes::red_op(name), "{name}");
        }
    }
}
