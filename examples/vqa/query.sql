-- Visual question answering (JellyBean Figure 1, the `medium` setup of
-- shared/reference/jellybean-vqa-medium): an image and a spoken question per
-- request; image features and the transcribed question meet in the VQA model.
--
--   ReadImage  -> ExtractImageFeature --\
--                                        VQA -> answers
--   ReadSpeech -> SpeechRecognition ----/
--
-- Model files are placeholders: the prototype's models are not shipped.

CREATE STREAM ReadImage (request_id BIGINT, image TENSOR(FLOAT, 3, 224, 224))
  FROM NATS 'vqa.images' FORMAT ARROW AT TIER edge RATE 40 PER SECOND;

CREATE STREAM ReadSpeech (request_id BIGINT, audio TENSOR(FLOAT, 24000))
  FROM NATS 'vqa.speech' FORMAT ARROW AT TIER edge RATE 40 PER SECOND;

CREATE MODEL ExtractImageFeature TASK 'image-feature-extraction'
  INPUTS (image TENSOR(FLOAT, 3, 224, 224))
  OUTPUTS (features TENSOR(FLOAT, 2048))
  VARIANTS (
    resnet18 FROM 'models/resnet18.onnx',
    resnet34 FROM 'models/resnet34.onnx',
    resnet50 FROM 'models/resnet50.onnx',
    resnet101 FROM 'models/resnet101.onnx',
    resnet152 FROM 'models/resnet152.onnx'
  );

CREATE MODEL SpeechRecognition TASK 'speech-recognition'
  INPUTS (audio TENSOR(FLOAT, 24000))
  OUTPUTS (text VARCHAR)
  VARIANTS (
    "wav2vec2-base-960h" FROM 'models/wav2vec2-base-960h.onnx',
    "wav2vec2-large-960h-lv60-self" FROM 'models/wav2vec2-large-960h-lv60-self.onnx'
  );

CREATE MODEL VQA TASK 'visual-question-answering'
  INPUTS (features TENSOR(FLOAT, 2048), text VARCHAR)
  OUTPUTS (answer VARCHAR)
  VARIANTS (default FROM 'models/vqa.onnx');

CREATE SINK answers TO NATS 'vqa.answers' FORMAT JSON;

INSERT INTO answers
SELECT img.request_id, a.answer
FROM (
    SELECT ReadImage.request_id, f.features
    FROM ReadImage
    CROSS JOIN LATERAL ExtractImageFeature(image) AS f(features)
  ) AS img
JOIN (
    SELECT ReadSpeech.request_id, s.text
    FROM ReadSpeech
    CROSS JOIN LATERAL SpeechRecognition(audio) AS s(text)
  ) AS q ON img.request_id = q.request_id
CROSS JOIN LATERAL VQA(img.features, q.text) AS a(answer)
WITH (ACCURACY >= 56.0, THROUGHPUT >= 40 PER SECOND);
