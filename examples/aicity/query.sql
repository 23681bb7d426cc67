-- Vehicle tracking across neighbouring intersections (NVIDIA AI City Challenge,
-- JellyBean Figure 2): per frame, detect vehicles (YOLOv5), extract
-- re-identification features per vehicle (ResNet), track per camera, then
-- cluster tracks across cameras. THROUGHPUT counts frames entering the workflow.
-- It plans with the catalog.yaml and infra.yaml beside it; it does not run:
-- the paper's model files (models/yolov5s.onnx, ...) are not available.
-- examples/setups/aicity.sql is the same query over JellyBean's Table 4 sizes.
--   tierflow explain examples/aicity/query.sql
INSERT INTO trajectories
SELECT cameras.camera, cameras.ts, t.track_id, c.vehicle_id
FROM cameras
CROSS JOIN LATERAL ObjectDetection(frame) AS d(box, crop, score)
CROSS JOIN LATERAL ReID(d.crop) AS r(embedding)
CROSS JOIN LATERAL SingleCameraTracking(cameras.camera, cameras.ts, d.box, r.embedding) AS t(track_id, embedding)
CROSS JOIN LATERAL CrossCameraClustering(cameras.camera, t.track_id, t.embedding) AS c(vehicle_id)
WITH (ACCURACY >= 0.70, THROUGHPUT >= 8 PER SECOND);
