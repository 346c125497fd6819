package timeline

import "testing"

func TestShortKernelName(t *testing.T) {
	for _, c := range [][2]string{
		{"void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 512, true, 1>(float, float, float, float, cudnnTensorStruct)",
			"bn_bw_1C11_kernel_new"},
		{"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >(int, " +
			"at::native::FillFunctor<float>, std::array<char*, 1ul>)", "vectorized_elementwise_kernel"},
		{"void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, false, false>(float*, float const*, int, int)",
			"softmax_warp_forward"},
		{"void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl<at::native::AddFunctor<float> >(" +
			"at::TensorIteratorBase&, at::native::AddFunctor<float> const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl<" +
			"at::native::AddFunctor<float> >(at::TensorIteratorBase&, at::native::AddFunctor<float> const&)::{lambda(int)#1})",
			"elementwise_kernel"},
		{"sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x128x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
			"sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x128x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas"},
		{"nchwToNhwcKernel", "nchwToNhwcKernel"},
		{"Memcpy DtoH (Device -> Pageable)", "Memcpy DtoH (Device -> Pageable)"},
		{"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", "ncclDevKernel_AllReduce_Sum_f32_RING_LL"},
		{"at::cuda::(anonymous namespace)::spin_kernel(long)", "spin_kernel"},
	} {
		if got := ShortKernelName(c[0]); got != c[1] {
			t.Errorf("ShortKernelName(%.60q) = %q, want %q", c[0], got, c[1])
		}
	}
}
