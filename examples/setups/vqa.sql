-- Visual question answering (JellyBean Figure 1) over the Table 4 setups.
-- Objectives here are the medium setup's; tierflow bench planner sweeps others.
--   tierflow explain --catalog examples/setups/vqa.catalog.yaml \
--     --infra examples/setups/vqa-large.infra.yaml --throughput 60 examples/setups/vqa.sql
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
