//! [`TensorMapApi`](crate::driver::api::TensorMapApi) for both ABIs: the four functions have
//! the same signatures in both headers (the 13 header aligns `CUtensorMap` to 128 bytes, the
//! 12.9 header to 64; the bytes passed are aligned to 128).

use super::*;

impl crate::driver::api::TensorMapApi for Drv {
    fn tensor_map_encode_tiled(
        &self,
        out: &mut crate::driver::api::TensorMapBytes,
        tensor: &crate::driver::api::TensorSpec<'_>,
        box_dims: &[u32],
    ) -> Result<()> {
        call!(self.cuTensorMapEncodeTiled(
            (out as *mut crate::driver::api::TensorMapBytes).cast(),
            sys::CUtensorMapDataType(tensor.data_type),
            tensor.dims.len() as u32,
            tensor.address as *mut std::ffi::c_void,
            tensor.dims.as_ptr(),
            tensor.strides.as_ptr(),
            box_dims.as_ptr(),
            tensor.element_strides.as_ptr(),
            sys::CUtensorMapInterleave(tensor.interleave),
            sys::CUtensorMapSwizzle(tensor.swizzle),
            sys::CUtensorMapL2promotion(tensor.l2_promotion),
            sys::CUtensorMapFloatOOBfill(tensor.oob_fill)
        ))
    }

    fn tensor_map_encode_im2col(
        &self,
        out: &mut crate::driver::api::TensorMapBytes,
        tensor: &crate::driver::api::TensorSpec<'_>,
        im2col: &crate::driver::api::Im2colSpec<'_>,
    ) -> Result<()> {
        call!(self.cuTensorMapEncodeIm2col(
            (out as *mut crate::driver::api::TensorMapBytes).cast(),
            sys::CUtensorMapDataType(tensor.data_type),
            tensor.dims.len() as u32,
            tensor.address as *mut std::ffi::c_void,
            tensor.dims.as_ptr(),
            tensor.strides.as_ptr(),
            im2col.lower.as_ptr(),
            im2col.upper.as_ptr(),
            im2col.channels_per_pixel,
            im2col.pixels_per_column,
            tensor.element_strides.as_ptr(),
            sys::CUtensorMapInterleave(tensor.interleave),
            sys::CUtensorMapSwizzle(tensor.swizzle),
            sys::CUtensorMapL2promotion(tensor.l2_promotion),
            sys::CUtensorMapFloatOOBfill(tensor.oob_fill)
        ))
    }

    fn tensor_map_encode_im2col_wide(
        &self,
        out: &mut crate::driver::api::TensorMapBytes,
        tensor: &crate::driver::api::TensorSpec<'_>,
        im2col: &crate::driver::api::Im2colWideSpec,
    ) -> Result<()> {
        call!(self.cuTensorMapEncodeIm2colWide(
            (out as *mut crate::driver::api::TensorMapBytes).cast(),
            sys::CUtensorMapDataType(tensor.data_type),
            tensor.dims.len() as u32,
            tensor.address as *mut std::ffi::c_void,
            tensor.dims.as_ptr(),
            tensor.strides.as_ptr(),
            im2col.lower,
            im2col.upper,
            im2col.channels_per_pixel,
            im2col.pixels_per_column,
            tensor.element_strides.as_ptr(),
            sys::CUtensorMapInterleave(tensor.interleave),
            sys::CUtensorMapIm2ColWideMode(im2col.mode),
            sys::CUtensorMapSwizzle(tensor.swizzle),
            sys::CUtensorMapL2promotion(tensor.l2_promotion),
            sys::CUtensorMapFloatOOBfill(tensor.oob_fill)
        ))
    }

    fn tensor_map_replace_address(
        &self,
        map: &mut crate::driver::api::TensorMapBytes,
        address: DevicePtr,
    ) -> Result<()> {
        call!(self.cuTensorMapReplaceAddress(
            (map as *mut crate::driver::api::TensorMapBytes).cast(),
            address as *mut std::ffi::c_void
        ))
    }
}
