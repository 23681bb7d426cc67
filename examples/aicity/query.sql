-- Vehicle tracking across the cameras of neighbouring intersections (NVIDIA AI
-- City Challenge; JellyBean Figure 2, Table 3, `medium` objectives of Table 4).
-- Per camera: object detection (YOLOv5 n/s/m/l/x) -> re-identification
-- features (ResNet 18/34/50/101/152) -> single-camera tracking; then
-- cross-camera clustering over the union of the cameras' tracks.
--
-- Model files are placeholders: the prototype's models are not shipped.

CREATE STREAM camera1 (camera INT, frame_id BIGINT, ts TIMESTAMP, frame TENSOR(FLOAT, 3, 640, 640))
  FROM NATS 'aicity.cam1' FORMAT ARROW AT TIER edge RATE 4 PER SECOND;

CREATE STREAM camera2 (camera INT, frame_id BIGINT, ts TIMESTAMP, frame TENSOR(FLOAT, 3, 640, 640))
  FROM NATS 'aicity.cam2' FORMAT ARROW AT TIER edge RATE 4 PER SECOND;

CREATE MODEL ObjectDetection TASK 'object-detection'
  INPUTS (frame TENSOR(FLOAT, 3, 640, 640))
  OUTPUTS (box TENSOR(FLOAT, 4), crop TENSOR(FLOAT, 3, 256, 256), score FLOAT)
  VARIANTS (
    yolov5n FROM 'models/yolov5n.onnx',
    yolov5s FROM 'models/yolov5s.onnx',
    yolov5m FROM 'models/yolov5m.onnx',
    yolov5l FROM 'models/yolov5l.onnx',
    yolov5x FROM 'models/yolov5x.onnx'
  );

CREATE MODEL ReID TASK 'object-reidentification'
  INPUTS (crop TENSOR(FLOAT, 3, 256, 256))
  OUTPUTS (embedding TENSOR(FLOAT, 2048))
  VARIANTS (
    resnet18 FROM 'models/reid-resnet18.onnx',
    resnet34 FROM 'models/reid-resnet34.onnx',
    resnet50 FROM 'models/reid-resnet50.onnx',
    resnet101 FROM 'models/reid-resnet101.onnx',
    resnet152 FROM 'models/reid-resnet152.onnx'
  );

-- Tracking and clustering are modules without model choices: one variant each.
CREATE MODEL SingleCameraTracking TASK 'tracking'
  INPUTS (camera INT, ts TIMESTAMP, box TENSOR(FLOAT, 4), embedding TENSOR(FLOAT, 2048))
  OUTPUTS (track_id BIGINT, embedding TENSOR(FLOAT, 2048))
  VARIANTS (default FROM 'models/sct.onnx');

CREATE MODEL CrossCameraClustering TASK 'clustering'
  INPUTS (camera INT, track_id BIGINT, embedding TENSOR(FLOAT, 2048))
  OUTPUTS (vehicle_id BIGINT)
  VARIANTS (default FROM 'models/mcmt.onnx');

CREATE SINK trajectories TO NATS 'aicity.trajectories' FORMAT JSON;

INSERT INTO trajectories
SELECT tracks.camera, tracks.ts, tracks.track_id, c.vehicle_id
FROM (
    SELECT camera1.camera, camera1.ts, t.track_id, t.embedding
    FROM camera1
    CROSS JOIN LATERAL ObjectDetection(frame) AS d(box, crop, score)
    CROSS JOIN LATERAL ReID(d.crop) AS r(embedding)
    CROSS JOIN LATERAL SingleCameraTracking(camera1.camera, camera1.ts, d.box, r.embedding) AS t(track_id, embedding)
    WHERE d.score > 0.5
    UNION ALL
    SELECT camera2.camera, camera2.ts, t.track_id, t.embedding
    FROM camera2
    CROSS JOIN LATERAL ObjectDetection(frame) AS d(box, crop, score)
    CROSS JOIN LATERAL ReID(d.crop) AS r(embedding)
    CROSS JOIN LATERAL SingleCameraTracking(camera2.camera, camera2.ts, d.box, r.embedding) AS t(track_id, embedding)
    WHERE d.score > 0.5
  ) AS tracks
CROSS JOIN LATERAL CrossCameraClustering(tracks.camera, tracks.track_id, tracks.embedding) AS c(vehicle_id)
WITH (ACCURACY >= 0.70, THROUGHPUT >= 8 PER SECOND);
