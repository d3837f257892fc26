//! An ONNX graph of a BERT sentence encoder, written from the shipped weights.
//!
//! The graph is built in memory each time a model is loaded (well under a second), so the
//! weights on disk stay the only artefact and nothing is downloaded from a model hub: the same
//! weights always give the same graph. It uses ONNX Runtime's fused CPU operators
//! (`com.microsoft` domain: embedding + layer norm, attention, skip + layer norm, bias + GELU),
//! which is what its own BERT optimizer would produce, and ends in masked mean pooling, so one
//! call returns one (unnormalized) vector per sequence.
//!
//! Inputs: `input_ids` and `attention_mask`, both `int32 [batch, seq]`, right-padded; or, for a
//! model whose embedding layer runs outside the graph ([`GraphInput::Embedded`]), `embedded`,
//! `float [batch, seq, hidden]`, in place of the ids.
//! Output: `pooled`, `float [batch, hidden]`.

use std::collections::HashMap;

use super::proto::{
    Attribute, Dimension, Graph, Model, Node, OperatorSet, Shape, Tensor, TensorType, Type,
    ValueInfo, ATTRIBUTE_FLOAT, ATTRIBUTE_INT, FLOAT, INT32, INT64,
};

/// Names of the graph's inputs and output.
pub const INPUT_IDS: &str = "input_ids";
pub const ATTENTION_MASK: &str = "attention_mask";
pub const POOLED: &str = "pooled";
pub const EMBEDDED: &str = "embedded";

/// Where the graph starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GraphInput {
    /// Token ids, through the embedding layer in the graph.
    TokenIds,
    /// The embedding layer's output, computed by the caller.
    Embedded,
}

/// The encoder's shape, from the model's `config.json`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EncoderShape {
    pub layers: usize,
    pub hidden: usize,
    pub heads: usize,
    pub layer_norm_eps: f32,
}

/// Why the weights did not make a graph: a tensor is missing or has the wrong shape.
#[derive(Debug, thiserror::Error)]
pub enum GraphError {
    #[error("weights have no tensor {0}")]
    Missing(String),
    #[error("tensor {name} has shape {got:?}, expected {expected:?}")]
    Shape {
        name: String,
        got: Vec<usize>,
        expected: Vec<usize>,
    },
}

/// Named f32 weights with their shapes (row-major, as PyTorch stores them: a linear layer's
/// weight is `[out, in]`).
pub struct Weights {
    tensors: HashMap<String, (Vec<usize>, Vec<f32>)>,
}

impl Weights {
    /// Names may carry a `bert.` prefix (checkpoints saved from a task model); it is dropped.
    pub fn new(tensors: impl IntoIterator<Item = (String, Vec<usize>, Vec<f32>)>) -> Self {
        let tensors = tensors
            .into_iter()
            .map(|(name, dims, data)| {
                let name = name
                    .strip_prefix("bert.")
                    .map(str::to_string)
                    .unwrap_or(name);
                (name, (dims, data))
            })
            .collect();
        Weights { tensors }
    }

    fn get(&self, name: &str, expected: &[usize]) -> Result<&[f32], GraphError> {
        let (dims, data) = self
            .tensors
            .get(name)
            .ok_or_else(|| GraphError::Missing(name.to_string()))?;
        if dims != expected {
            return Err(GraphError::Shape {
                name: name.to_string(),
                got: dims.clone(),
                expected: expected.to_vec(),
            });
        }
        Ok(data)
    }

    /// A 2-D tensor's first dimension (the vocabulary or position table size).
    fn rows(&self, name: &str) -> Result<usize, GraphError> {
        let (dims, _) = self
            .tensors
            .get(name)
            .ok_or_else(|| GraphError::Missing(name.to_string()))?;
        Ok(dims.first().copied().unwrap_or(0))
    }
}

/// The serialized ONNX model of the encoder (f32 throughout).
pub fn build(
    weights: &Weights,
    shape: EncoderShape,
    input: GraphInput,
) -> Result<Vec<u8>, GraphError> {
    use prost::Message;
    let mut b = Builder::default();
    let (mut x, first) = match input {
        GraphInput::TokenIds => (
            b.embeddings(weights, shape)?,
            value_info(INPUT_IDS, INT32, &["batch", "seq"]),
        ),
        GraphInput::Embedded => (
            EMBEDDED.to_string(),
            value_info(EMBEDDED, FLOAT, &["batch", "seq", "hidden"]),
        ),
    };
    for layer in 0..shape.layers {
        x = b.layer(weights, shape, layer, &x)?;
    }
    b.mean_pool(&x);
    let graph = Graph {
        node: b.nodes,
        name: "sentence_encoder".into(),
        initializer: b.initializers,
        input: vec![first, value_info(ATTENTION_MASK, INT32, &["batch", "seq"])],
        output: vec![value_info(POOLED, FLOAT, &["batch", "hidden"])],
    };
    let model = Model {
        ir_version: 8,
        opset_import: vec![opset("", 17), opset("com.microsoft", 1)],
        producer_name: "mnemos".into(),
        producer_version: env!("CARGO_PKG_VERSION").into(),
        graph: Some(graph),
    };
    Ok(model.encode_to_vec())
}

fn opset(domain: &str, version: i64) -> OperatorSet {
    OperatorSet {
        domain: domain.into(),
        version,
    }
}

fn value_info(name: &str, elem_type: i32, dims: &[&str]) -> ValueInfo {
    let dim = dims
        .iter()
        .map(|d| Dimension {
            dim_param: (*d).into(),
        })
        .collect();
    ValueInfo {
        name: name.into(),
        r#type: Some(Type {
            tensor_type: Some(TensorType {
                elem_type,
                shape: Some(Shape { dim }),
            }),
        }),
    }
}

const MS: &str = "com.microsoft";

/// Accumulates nodes and initializers; every method returns the name of the value it made.
#[derive(Default)]
struct Builder {
    nodes: Vec<Node>,
    initializers: Vec<Tensor>,
}

impl Builder {
    fn constant_f32(&mut self, name: &str, dims: &[usize], data: &[f32]) -> String {
        let raw_data = data.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.constant(name, dims, FLOAT, raw_data)
    }

    fn constant(&mut self, name: &str, dims: &[usize], data_type: i32, raw: Vec<u8>) -> String {
        self.initializers.push(Tensor {
            dims: dims.iter().map(|&d| d as i64).collect(),
            data_type,
            name: name.into(),
            raw_data: raw,
        });
        name.into()
    }

    fn node(
        &mut self,
        op: &str,
        domain: &str,
        inputs: &[&str],
        output: &str,
        attributes: Vec<Attribute>,
    ) -> String {
        self.nodes.push(Node {
            input: inputs.iter().map(|s| (*s).to_string()).collect(),
            output: vec![output.to_string()],
            name: output.to_string(),
            op_type: op.into(),
            attribute: attributes,
            domain: domain.into(),
        });
        output.into()
    }

    /// Word + position (+ token type 0, folded into the position table: mnemos never sends
    /// a second segment) embeddings, then layer norm.
    fn embeddings(&mut self, w: &Weights, s: EncoderShape) -> Result<String, GraphError> {
        let h = s.hidden;
        let vocab = w.rows("embeddings.word_embeddings.weight")?;
        let positions = w.rows("embeddings.position_embeddings.weight")?;
        let word = w.get("embeddings.word_embeddings.weight", &[vocab, h])?;
        let pos = w.get("embeddings.position_embeddings.weight", &[positions, h])?;
        let types = w.rows("embeddings.token_type_embeddings.weight")?;
        let type0 = &w.get("embeddings.token_type_embeddings.weight", &[types, h])?[..h];
        let pos_with_type: Vec<f32> = pos
            .iter()
            .enumerate()
            .map(|(i, v)| v + type0[i % h])
            .collect();
        let word = self.constant_f32("word_embeddings", &[vocab, h], word);
        let pos = self.constant_f32("position_embeddings", &[positions, h], &pos_with_type);
        let gamma = self.constant_f32(
            "embeddings_ln_weight",
            &[h],
            w.get("embeddings.LayerNorm.weight", &[h])?,
        );
        let beta = self.constant_f32(
            "embeddings_ln_bias",
            &[h],
            w.get("embeddings.LayerNorm.bias", &[h])?,
        );
        self.nodes.push(Node {
            input: [
                INPUT_IDS,
                "",
                &word,
                &pos,
                "",
                &gamma,
                &beta,
                ATTENTION_MASK,
            ]
            .map(String::from)
            .to_vec(),
            output: vec!["embedded".into(), "mask_index".into()],
            name: "embeddings".into(),
            op_type: "EmbedLayerNormalization".into(),
            attribute: vec![float_attr("epsilon", s.layer_norm_eps)],
            domain: MS.into(),
        });
        Ok("embedded".into())
    }

    /// One transformer layer: attention, skip + layer norm, feed-forward, skip + layer norm.
    fn layer(
        &mut self,
        w: &Weights,
        s: EncoderShape,
        i: usize,
        x: &str,
    ) -> Result<String, GraphError> {
        let h = s.hidden;
        let p = format!("encoder.layer.{i}.");
        let (qkv_w, qkv_b) = fused_qkv(w, &p, h)?;
        let qkv_w = self.constant_f32(&format!("l{i}_qkv_weight"), &[h, 3 * h], &qkv_w);
        let qkv_b = self.constant_f32(&format!("l{i}_qkv_bias"), &[3 * h], &qkv_b);
        let context = self.node(
            "Attention",
            MS,
            &[x, &qkv_w, &qkv_b, ATTENTION_MASK],
            &format!("l{i}_context"),
            vec![int_attr("num_heads", s.heads as i64)],
        );
        let out = format!("{p}attention.output.");
        let projected = self.linear(w, &format!("{out}dense"), &context, h, h)?;
        let x = self.skip_layer_norm(w, &format!("{out}LayerNorm"), &projected, x, s)?;
        let inter = w.rows(&format!("{p}intermediate.dense.weight"))?;
        let up = self.linear(w, &format!("{p}intermediate.dense"), &x, h, inter)?;
        let gelu = self.node(
            "BiasGelu",
            MS,
            &[&up.0, &up.1],
            &format!("l{i}_gelu"),
            Vec::new(),
        );
        let down = self.linear(w, &format!("{p}output.dense"), &gelu, inter, h)?;
        self.skip_layer_norm(w, &format!("{p}output.LayerNorm"), &down, &x, s)
    }

    /// `input × weightᵀ` without the bias, which the next fused node adds; returns the product
    /// and the bias constant.
    fn linear(
        &mut self,
        w: &Weights,
        prefix: &str,
        input: &str,
        inputs: usize,
        outputs: usize,
    ) -> Result<(String, String), GraphError> {
        let weight = w.get(&format!("{prefix}.weight"), &[outputs, inputs])?;
        let bias = w.get(&format!("{prefix}.bias"), &[outputs])?;
        let transposed = transpose(weight, outputs, inputs);
        let bias = self.constant_f32(&format!("{prefix}.bias"), &[outputs], bias);
        let wt = self.constant_f32(&format!("{prefix}.weight"), &[inputs, outputs], &transposed);
        let product = self.node(
            "MatMul",
            "",
            &[input, &wt],
            &format!("{prefix}.product"),
            Vec::new(),
        );
        Ok((product, bias))
    }

    /// `LayerNorm(product + bias + skip)` in one fused node.
    fn skip_layer_norm(
        &mut self,
        w: &Weights,
        prefix: &str,
        (product, bias): &(String, String),
        skip: &str,
        s: EncoderShape,
    ) -> Result<String, GraphError> {
        let h = s.hidden;
        let gamma = self.constant_f32(
            &format!("{prefix}.weight"),
            &[h],
            w.get(&format!("{prefix}.weight"), &[h])?,
        );
        let beta = self.constant_f32(
            &format!("{prefix}.bias"),
            &[h],
            w.get(&format!("{prefix}.bias"), &[h])?,
        );
        Ok(self.node(
            "SkipLayerNormalization",
            MS,
            &[product, skip, &gamma, &beta, bias],
            &format!("{prefix}.out"),
            vec![float_attr("epsilon", s.layer_norm_eps)],
        ))
    }

    /// `sum(hidden · mask) / max(sum(mask), 1e-9)` over the sequence, as sentence-transformers'
    /// `Pooling(mean)` computes it.
    fn mean_pool(&mut self, hidden: &str) {
        let axis2 = self.constant("axis_2", &[1], INT64, 2i64.to_le_bytes().to_vec());
        let axis1 = self.constant("axis_1", &[1], INT64, 1i64.to_le_bytes().to_vec());
        let tiny = self.constant_f32("tiny", &[], &[1e-9]);
        let mask = self.node(
            "Cast",
            "",
            &[ATTENTION_MASK],
            "mask_float",
            vec![int_attr("to", i64::from(FLOAT))],
        );
        let mask = self.node("Unsqueeze", "", &[&mask, &axis2], "mask_3d", Vec::new());
        let masked = self.node("Mul", "", &[hidden, &mask], "masked", Vec::new());
        let keep = || vec![int_attr("keepdims", 0)];
        let summed = self.node("ReduceSum", "", &[&masked, &axis1], "summed", keep());
        let counts = self.node("ReduceSum", "", &[&mask, &axis1], "counts", keep());
        let counts = self.node("Max", "", &[&counts, &tiny], "counts_clamped", Vec::new());
        self.node("Div", "", &[&summed, &counts], POOLED, Vec::new());
    }
}

/// Query, key and value projections side by side, `[hidden, 3·hidden]`, as the fused
/// attention operator takes them.
fn fused_qkv(w: &Weights, p: &str, h: usize) -> Result<(Vec<f32>, Vec<f32>), GraphError> {
    let mut weight = vec![0f32; h * 3 * h];
    let mut bias = Vec::with_capacity(3 * h);
    for (part, name) in ["query", "key", "value"].iter().enumerate() {
        let wt = w.get(&format!("{p}attention.self.{name}.weight"), &[h, h])?;
        for out in 0..h {
            for inp in 0..h {
                weight[inp * 3 * h + part * h + out] = wt[out * h + inp];
            }
        }
        bias.extend_from_slice(w.get(&format!("{p}attention.self.{name}.bias"), &[h])?);
    }
    Ok((weight, bias))
}

fn transpose(m: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut t = vec![0f32; m.len()];
    for r in 0..rows {
        for c in 0..cols {
            t[c * rows + r] = m[r * cols + c];
        }
    }
    t
}

fn float_attr(name: &str, f: f32) -> Attribute {
    Attribute {
        name: name.into(),
        f,
        i: 0,
        r#type: ATTRIBUTE_FLOAT,
    }
}

fn int_attr(name: &str, i: i64) -> Attribute {
    Attribute {
        name: name.into(),
        f: 0.0,
        i,
        r#type: ATTRIBUTE_INT,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qkv_is_fused_column_blocks_of_the_transposed_weights() {
        let h = 2;
        let mut tensors = Vec::new();
        for (k, name) in ["query", "key", "value"].iter().enumerate() {
            let base = (k * 10) as f32;
            tensors.push((
                format!("bert.l.attention.self.{name}.weight"),
                vec![h, h],
                vec![base, base + 1.0, base + 2.0, base + 3.0],
            ));
            tensors.push((
                format!("l.attention.self.{name}.bias"),
                vec![h],
                vec![base; h],
            ));
        }
        let w = Weights::new(tensors);
        let (weight, bias) = fused_qkv(&w, "l.", h).unwrap();
        // Row `in`, column `part·h + out` holds W_part[out][in].
        assert_eq!(
            weight,
            vec![0.0, 2.0, 10.0, 12.0, 20.0, 22.0, 1.0, 3.0, 11.0, 13.0, 21.0, 23.0]
        );
        assert_eq!(bias, vec![0.0, 0.0, 10.0, 10.0, 20.0, 20.0]);
    }

    #[test]
    fn missing_and_misshapen_weights_are_named() {
        let w = Weights::new(vec![("a".to_string(), vec![2], vec![1.0, 2.0])]);
        assert!(matches!(w.get("b", &[2]), Err(GraphError::Missing(n)) if n == "b"));
        assert!(matches!(w.get("a", &[3]), Err(GraphError::Shape { .. })));
    }
}
