//! The one style of every options struct: public fields, `Default`, and a `with_*` chainer
//! per field, so that `StreamOptions::default().with_priority(-1)` and the struct literal
//! `StreamOptions { priority: Some(-1), ..Default::default() }` say the same.

/// Writes an options struct's chainers: `name(field: Type)` sets the field to the value;
/// `name(field: Type) => some` sets an `Option` field to `Some(value.into())`.
macro_rules! chainers {
    ($ty:ty { $($method:ident($field:ident: $arg:ty) $(=> $wrap:ident)?;)* }) => {
        impl $ty {
            $(
                #[doc = concat!("Sets [`", stringify!($field), "`](Self::", stringify!($field), ").")]
                #[must_use]
                #[inline]
                pub fn $method(mut self, value: $arg) -> Self {
                    self.$field = $crate::options::chainers!(@wrap value $($wrap)?);
                    self
                }
            )*
        }
    };
    (@wrap $value:ident) => { $value };
    (@wrap $value:ident some) => { Some($value.into()) };
}
pub(crate) use chainers;
