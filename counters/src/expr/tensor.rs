//! Counter values: one value per counter instance, each at a point of the SDK's dimensions.

/// The dimensions rocprofiler-sdk gives counter instances, in its order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dimension {
    Xcc,
    Aid,
    ShaderEngine,
    Agent,
    ShaderArray,
    Wgp,
    Instance,
}

impl Dimension {
    pub const COUNT: usize = 7;

    pub const ALL: [Dimension; Self::COUNT] = [
        Dimension::Xcc,
        Dimension::Aid,
        Dimension::ShaderEngine,
        Dimension::Agent,
        Dimension::ShaderArray,
        Dimension::Wgp,
        Dimension::Instance,
    ];

    /// The name expressions use, e.g. `DIMENSION_SHADER_ENGINE`.
    pub fn name(self) -> &'static str {
        match self {
            Dimension::Xcc => "DIMENSION_XCC",
            Dimension::Aid => "DIMENSION_AID",
            Dimension::ShaderEngine => "DIMENSION_SHADER_ENGINE",
            Dimension::Agent => "DIMENSION_AGENT",
            Dimension::ShaderArray => "DIMENSION_SHADER_ARRAY",
            Dimension::Wgp => "DIMENSION_WGP",
            Dimension::Instance => "DIMENSION_INSTANCE",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|d| d.name() == name)
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// An instance's index along every dimension (zero along those it does not vary in).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Coordinates([u32; Dimension::COUNT]);

impl Coordinates {
    /// The point with the given indices, zero elsewhere.
    pub fn at(point: &[(Dimension, u32)]) -> Self {
        let mut coordinates = Coordinates::default();
        for &(dimension, index) in point {
            coordinates.set(dimension, index);
        }
        coordinates
    }

    pub fn get(&self, dimension: Dimension) -> u32 {
        self.0[dimension.index()]
    }

    pub fn set(&mut self, dimension: Dimension, index: u32) {
        self.0[dimension.index()] = index;
    }
}

/// One counter instance: where it is and what it counted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Instance {
    pub coordinates: Coordinates,
    pub value: f64,
}

/// A counter's value: a tensor over the SDK's dimensions.
///
/// It is kept as the SDK keeps it, a list of instances, rather than as a dense array:
/// the SDK's operations are defined on that list (arithmetic pairs instances by position,
/// and selecting several indices of a dimension merges them into index 0), and results
/// must match the SDK's.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Tensor {
    instances: Vec<Instance>,
}

impl Tensor {
    pub fn new(instances: Vec<Instance>) -> Self {
        Tensor { instances }
    }

    /// A single value, such as a number or an agent property.
    pub fn scalar(value: f64) -> Self {
        Tensor::new(vec![Instance {
            coordinates: Coordinates::default(),
            value,
        }])
    }

    /// A dense tensor of the given shape, `values` in row-major order (the last dimension
    /// varies fastest).
    ///
    /// # Panics
    /// If `values` does not hold one value per point of the shape.
    pub fn from_shape(shape: &[(Dimension, u32)], values: &[f64]) -> Self {
        let points: usize = shape.iter().map(|&(_, n)| n as usize).product();
        assert_eq!(values.len(), points, "one value per point of the shape");
        let instances = values
            .iter()
            .enumerate()
            .map(|(mut flat, &value)| {
                let mut coordinates = Coordinates::default();
                for &(dimension, size) in shape.iter().rev() {
                    coordinates.set(dimension, (flat % size as usize) as u32);
                    flat /= size as usize;
                }
                Instance { coordinates, value }
            })
            .collect();
        Tensor::new(instances)
    }

    pub fn instances(&self) -> &[Instance] {
        &self.instances
    }

    pub(crate) fn instances_mut(&mut self) -> &mut Vec<Instance> {
        &mut self.instances
    }

    /// The values in instance order.
    pub fn values(&self) -> Vec<f64> {
        self.instances.iter().map(|i| i.value).collect()
    }

    /// The value at a point (given dimensions at those indices, all others at zero).
    pub fn value_at(&self, point: &[(Dimension, u32)]) -> Option<f64> {
        let coordinates = Coordinates::at(point);
        self.instances
            .iter()
            .find(|i| i.coordinates == coordinates)
            .map(|i| i.value)
    }

    pub fn len(&self) -> usize {
        self.instances.len()
    }

    pub fn is_empty(&self) -> bool {
        self.instances.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_shape_is_row_major() {
        let t = Tensor::from_shape(
            &[(Dimension::Xcc, 2), (Dimension::ShaderEngine, 3)],
            &[0.0, 1.0, 2.0, 10.0, 11.0, 12.0],
        );
        assert_eq!(
            t.value_at(&[(Dimension::Xcc, 1), (Dimension::ShaderEngine, 2)]),
            Some(12.0)
        );
        assert_eq!(t.value_at(&[(Dimension::ShaderEngine, 1)]), Some(1.0));
        assert_eq!(t.len(), 6);
    }
}
