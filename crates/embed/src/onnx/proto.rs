//! The subset of the ONNX model format (`onnx.proto`, IR version 8) that the graph builder
//! writes: a model, one graph, its nodes, attributes, initializers and typed inputs/outputs.
//! Field numbers are the format's; messages and fields the builder never writes are left out
//! (protobuf readers skip what is absent).

/// `ModelProto`: the file.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Model {
    #[prost(int64, tag = "1")]
    pub ir_version: i64,
    #[prost(message, repeated, tag = "8")]
    pub opset_import: Vec<OperatorSet>,
    #[prost(string, tag = "2")]
    pub producer_name: String,
    #[prost(string, tag = "3")]
    pub producer_version: String,
    #[prost(message, optional, tag = "7")]
    pub graph: Option<Graph>,
}

/// `OperatorSetIdProto`: an operator domain ("" is the standard one) and its version.
#[derive(Clone, PartialEq, prost::Message)]
pub struct OperatorSet {
    #[prost(string, tag = "1")]
    pub domain: String,
    #[prost(int64, tag = "2")]
    pub version: i64,
}

/// `GraphProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Graph {
    #[prost(message, repeated, tag = "1")]
    pub node: Vec<Node>,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(message, repeated, tag = "5")]
    pub initializer: Vec<Tensor>,
    #[prost(message, repeated, tag = "11")]
    pub input: Vec<ValueInfo>,
    #[prost(message, repeated, tag = "12")]
    pub output: Vec<ValueInfo>,
}

/// `NodeProto`: one operator application. An empty input name means "input not given".
#[derive(Clone, PartialEq, prost::Message)]
pub struct Node {
    #[prost(string, repeated, tag = "1")]
    pub input: Vec<String>,
    #[prost(string, repeated, tag = "2")]
    pub output: Vec<String>,
    #[prost(string, tag = "3")]
    pub name: String,
    #[prost(string, tag = "4")]
    pub op_type: String,
    #[prost(message, repeated, tag = "5")]
    pub attribute: Vec<Attribute>,
    #[prost(string, tag = "7")]
    pub domain: String,
}

/// `AttributeProto`, for the two kinds the builder uses.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Attribute {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(float, tag = "2")]
    pub f: f32,
    #[prost(int64, tag = "3")]
    pub i: i64,
    /// `AttributeProto.AttributeType`.
    #[prost(int32, tag = "20")]
    pub r#type: i32,
}

/// `AttributeProto.AttributeType` values.
pub const ATTRIBUTE_FLOAT: i32 = 1;
pub const ATTRIBUTE_INT: i32 = 2;

/// `TensorProto`: a constant (initializer), little-endian bytes in `raw_data`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Tensor {
    #[prost(int64, repeated, tag = "1")]
    pub dims: Vec<i64>,
    /// `TensorProto.DataType`.
    #[prost(int32, tag = "2")]
    pub data_type: i32,
    #[prost(string, tag = "8")]
    pub name: String,
    #[prost(bytes = "vec", tag = "9")]
    pub raw_data: Vec<u8>,
}

/// `TensorProto.DataType` values.
pub const FLOAT: i32 = 1;
pub const INT32: i32 = 6;
pub const INT64: i32 = 7;

/// `ValueInfoProto`: a named, typed graph input or output.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ValueInfo {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub r#type: Option<Type>,
}

/// `TypeProto` holding a tensor type (its `oneof value` with only `tensor_type`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Type {
    #[prost(message, optional, tag = "1")]
    pub tensor_type: Option<TensorType>,
}

/// `TypeProto.Tensor`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorType {
    #[prost(int32, tag = "1")]
    pub elem_type: i32,
    #[prost(message, optional, tag = "2")]
    pub shape: Option<Shape>,
}

/// `TensorShapeProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Shape {
    #[prost(message, repeated, tag = "1")]
    pub dim: Vec<Dimension>,
}

/// `TensorShapeProto.Dimension`: a symbolic dimension (`dim_param`, field 2); the builder
/// declares every input dimension symbolic (batch and sequence length vary per call).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Dimension {
    #[prost(string, tag = "2")]
    pub dim_param: String,
}
