// RUN: tessel-opt %s -split-input-file -verify-diagnostics

// tessel.attention's verifier: what the kernels rely on.

func.func @rank(%q: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{query must have rank 3 ([B*H, S, D]) or 4 ([B, H, S, D])}}
  %y = tessel.attention %q, %q, %q {scale = 1.0 : f32} : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

func.func @leading_dims(%q: tensor<2x8x16xf32>, %k: tensor<1x8x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{query, key, value and result must have the same leading dims}}
  %y = tessel.attention %q, %k, %k {scale = 1.0 : f32} : (tensor<2x8x16xf32>, tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

func.func @head_dim(%q: tensor<2x8x16xf32>, %k: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{key's head dim 32 differs from query's 16}}
  %y = tessel.attention %q, %k, %k {scale = 1.0 : f32} : (tensor<2x8x16xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  return %y : tensor<2x8x32xf32>
}

// -----

func.func @keys(%q: tensor<2x8x16xf32>, %k: tensor<2x9x16xf32>, %v: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{value has 8 keys, key has 9}}
  %y = tessel.attention %q, %k, %v {scale = 1.0 : f32} : (tensor<2x8x16xf32>, tensor<2x9x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

func.func @result(%q: tensor<2x8x16xf32>, %v: tensor<2x8x24xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{result must be [..., 8, 24]}}
  %y = tessel.attention %q, %q, %v {scale = 1.0 : f32} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x24xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

func.func @types(%q: tensor<2x8x16xf32>, %k: tensor<2x8x16xf16>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{query, key, value and result must share a float element type}}
  %y = tessel.attention %q, %k, %q {scale = 1.0 : f32} : (tensor<2x8x16xf32>, tensor<2x8x16xf16>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

func.func @mask_type(%q: tensor<2x8x16xf32>, %m: tensor<8x8xi32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{mask must be a float (additive) or i1 (keep) tensor}}
  %y = tessel.attention %q, %q, %q mask %m {scale = 1.0 : f32} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<8x8xi32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

func.func @mask_widens(%q: tensor<2x8x16xf32>, %m: tensor<3x2x8x8xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{mask must broadcast to the scores' shape [2, 8, 8]}}
  %y = tessel.attention %q, %q, %q mask %m {scale = 1.0 : f32} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<3x2x8x8xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

func.func @mask_shape(%q: tensor<2x8x16xf32>, %m: tensor<8x7xi1>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{mask must broadcast to the scores' shape [2, 8, 8]}}
  %y = tessel.attention %q, %q, %q mask %m {scale = 1.0 : f32} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<8x7xi1>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// Valid: rank 4, different D and Dv, a broadcast f16 mask, causal.
func.func @valid(%q: tensor<1x2x3x16xf16>, %k: tensor<1x2x5x16xf16>, %v: tensor<1x2x5x8xf16>,
                 %m: tensor<1x1x5xf16>) -> tensor<1x2x3x8xf16> {
  %y = tessel.attention %q, %k, %v mask %m {scale = 0.25 : f32, causal = true} : (tensor<1x2x3x16xf16>, tensor<1x2x5x16xf16>, tensor<1x2x5x8xf16>, tensor<1x1x5xf16>) -> tensor<1x2x3x8xf16>
  return %y : tensor<1x2x3x8xf16>
}
