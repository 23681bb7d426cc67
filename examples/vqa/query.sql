-- Visual question answering (JellyBean Figure 1) on the prototype's `medium`
-- setup: catalog.yaml and infra.yaml were generated with
--   tierflow import jellybean ../shared/reference/jellybean-vqa-medium --out examples/vqa
-- (the importer's own query is the same workflow with generated aliases).
--
--   ReadImage  -> ExtractImageFeature --\
--                                        VQA -> answers
--   ReadSpeech -> SpeechRecognition ----/
--
-- Plan it: tierflow explain examples/vqa/query.sql
-- Run it on real models (models/, from examples/vqa-live's networks behind
-- BLOB columns: vqa.go): start `tierflow run examples/vqa/query.sql`, then
-- publish the requests with `tierflow publish data/images.arrow readimage`
-- and `tierflow publish data/speech.arrow readspeech` (from examples/vqa).
SELECT img.request_id, a.vqa AS answer
FROM (
  SELECT ReadImage.request_id, f.extract_image_feature
  FROM ReadImage
  CROSS JOIN LATERAL ExtractImageFeature(image) AS f(extract_image_feature)
) AS img
JOIN (
  SELECT ReadSpeech.request_id, s.speech_recognition
  FROM ReadSpeech
  CROSS JOIN LATERAL SpeechRecognition(speech) AS s(speech_recognition)
) AS q ON img.request_id = q.request_id
CROSS JOIN LATERAL VQA(img.extract_image_feature, q.speech_recognition) AS a(vqa)
WITH (ACCURACY >= 56.0, THROUGHPUT >= 40 PER SECOND);
